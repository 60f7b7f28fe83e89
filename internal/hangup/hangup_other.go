//go:build !linux

package hangup

import (
	"errors"
	"net"
)

type poller interface {
	add(rc any, id uint64) error
	remove(rc any)
}

func rawConn(net.Conn) (any, bool) { return nil, false }

func newPoller(func(uint64)) (poller, error) { return nil, errors.New("hangup: not supported") }
