package store

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// DefaultSQLitePath returns where the embedded SQLite database lives when no
// database is configured: baton/baton.db under the user's data directory,
// that is $XDG_DATA_HOME (else ~/.local/share) on Unix,
// ~/Library/Application Support on macOS and %LocalAppData% on Windows. It
// does not create anything.
func DefaultSQLitePath() (string, error) {
	dir, err := userDataDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "baton", "baton.db"), nil
}

func userDataDir() (string, error) {
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LocalAppData"); d != "" {
			return d, nil
		}
		return "", errors.New("store: %LocalAppData% is not set")
	case "darwin", "ios":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, "Library", "Application Support"), nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "share"), nil
}
