package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dir is a [Store] of memory documents as Markdown files in a directory:
// Path/<owner>/<agent>.md, one file per owner and agent, which people may
// read and edit by hand. The zero Dir is not usable; set Path. A Dir is safe
// for concurrent use by multiple goroutines and by several processes that
// share the directory.
//
// Versions are content hashes (the hex SHA-256 of the file), not counters
// kept in a sidecar file: a hand edit made between a writer's read and its
// write changes the version, so the write fails with a *[ConflictError]
// instead of overwriting the edit. Two writes that produce the same content
// have the same version, which is harmless: a writer whose expected content
// is the stored content computed its new content from what is stored.
//
// Put holds an exclusive lock on the owner's directory (flock(2) on Unix; a
// ".lock" file created exclusively elsewhere) while it compares the stored
// version and replaces the file: it writes a temporary file in the same
// directory, fsyncs it, renames it over the document and fsyncs the
// directory, so that a crash leaves the old document or the new one, never
// a mix. A crash may leave a ".<agent>.md.tmp-*" file behind; it is never
// read and may be deleted. Get takes no lock: rename is atomic.
//
// Owner and agent names become path elements: bytes other than ASCII
// letters, digits, '-', '_' and a '.' that does not start the name are
// written as %XX, so no name can leave the directory. On a case-insensitive
// file system, names that differ only in case share a file.
type Dir struct {
	// Path is the directory. It and the owner directories are created on
	// first write with mode 0700.
	Path string
	// Perm is the mode of document files. Defaults to 0600.
	Perm fs.FileMode
}

// File returns the path of the document of owner and agent.
func (d *Dir) File(owner, agent string) (string, error) {
	if d.Path == "" {
		return "", fmt.Errorf("%w: memory directory path is empty", ErrInvalid)
	}
	if owner == "" || agent == "" {
		return "", fmt.Errorf("%w: owner and agent are required", ErrInvalid)
	}
	return filepath.Join(d.Path, escapeName(owner), escapeName(agent)+".md"), nil
}

// Get implements [Store].
func (d *Dir) Get(ctx context.Context, owner, agent string) (Document, error) {
	file, err := d.File(owner, agent)
	if err != nil {
		return Document{}, err
	}
	if err := ctx.Err(); err != nil {
		return Document{}, err
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Document{}, nil
	}
	if err != nil {
		return Document{}, fmt.Errorf("memory: read %s: %w", file, err)
	}
	return Document{Content: string(b), Version: hashVersion(b)}, nil
}

// Put implements [Store].
func (d *Dir) Put(ctx context.Context, owner, agent, content, expected string) (string, error) {
	file, err := d.File(owner, agent)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("memory: create %s: %w", dir, err)
	}
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("memory: lock %s: %w", dir, err)
	}
	defer unlock()

	var actual string
	switch b, err := os.ReadFile(file); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("memory: read %s: %w", file, err)
	default:
		actual = hashVersion(b)
	}
	if actual != expected {
		return "", &ConflictError{Owner: owner, Agent: agent, Expected: expected, Actual: actual}
	}
	perm := d.Perm
	if perm == 0 {
		perm = 0o600
	}
	if err := writeAtomic(file, []byte(content), perm); err != nil {
		return "", err
	}
	return hashVersion([]byte(content)), nil
}

// writeAtomic replaces file with data: temporary file, fsync, rename, fsync
// of the directory.
func writeAtomic(file string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return fmt.Errorf("memory: write %s: %w", file, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("memory: write %s: %w", tmp.Name(), err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("memory: chmod %s: %w", tmp.Name(), err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("memory: fsync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("memory: close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("memory: rename %s: %w", tmp.Name(), err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("memory: fsync %s: %w", dir, err)
	}
	return nil
}

func hashVersion(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// escapeName makes a name safe as one path element (see [Dir]).
func escapeName(s string) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexd[c>>4])
			b.WriteByte(hexd[c&15])
		}
	}
	return b.String()
}
