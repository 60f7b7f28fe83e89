//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package memory

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/batonhq/baton/internal/retry"
)

// staleLock is the age after which a lock file is taken to be left behind by
// a crashed writer.
const staleLock = 30 * time.Second

// lockDir creates dir/.lock exclusively, polling until it can or ctx ends.
func lockDir(ctx context.Context, dir string) (func(), error) {
	name := filepath.Join(dir, ".lock")
	wait := time.Millisecond
	for {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			_ = f.Close()
			return func() { _ = os.Remove(name) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(name); err == nil && time.Since(fi.ModTime()) > staleLock {
			_ = os.Remove(name)
			continue
		}
		if err := retry.Sleep(ctx, wait); err != nil {
			return nil, err
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// syncDir is a no-op where directories cannot be opened for fsync.
func syncDir(string) error { return nil }
