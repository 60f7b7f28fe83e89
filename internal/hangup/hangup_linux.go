package hangup

import (
	"net"
	"syscall"
)

// rawConn returns the raw connection of conn (unwrapping a TLS one), if it
// has one.
func rawConn(conn net.Conn) (syscall.RawConn, bool) {
	for {
		if u, ok := conn.(interface{ NetConn() net.Conn }); ok {
			conn = u.NetConn()
			continue
		}
		break
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	return rc, true
}

// poller is an epoll instance with its goroutine.
type poller interface {
	add(rc syscall.RawConn, id uint64) error
	remove(rc syscall.RawConn)
}

type epoller struct{ epfd int }

func newPoller(fire func(uint64)) (poller, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	p := &epoller{epfd: fd}
	go p.loop(fire)
	return p, nil
}

// events: the peer's hangup (FIN), a reset or error, data. Edge-triggered:
// each is reported once.
const events = syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR | syscall.EPOLLIN | -syscall.EPOLLET

func (p *epoller) add(rc syscall.RawConn, id uint64) error {
	ev := syscall.EpollEvent{Events: uint32(events), Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	var err error
	if cerr := rc.Control(func(fd uintptr) {
		err = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	}); cerr != nil {
		return cerr
	}
	return err
}

func (p *epoller) remove(rc syscall.RawConn) {
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
	})
}

func (p *epoller) loop(fire func(uint64)) {
	evs := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(p.epfd, evs, -1)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			return
		}
		for _, ev := range evs[:n] {
			fire(uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32)
		}
	}
}
