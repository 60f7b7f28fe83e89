//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package memory

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/batonhq/baton/internal/retry"
)

// lockDir takes an exclusive flock(2) on dir, polling until it is free or
// ctx ends. flock locks belong to an open file description, so two
// goroutines of one process exclude each other as two processes do.
func lockDir(ctx context.Context, dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	wait := time.Millisecond
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(fd, syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, err
		}
		if err := retry.Sleep(ctx, wait); err != nil {
			_ = f.Close()
			return nil, err
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
