package experiment

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/ecnswitch/ecnswitch/demo"
	"github.com/ecnswitch/ecnswitch/testbed"
)

// TCP traffic of fct and ecnsharp-incast.

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// fetcher is fct's client: 001 §5.1.2's "client application … generates
// requests through persistent TCP connections to the other … servers to
// fetch" flows. The client runs on the bottleneck host; every server (a
// sending host) keeps connections to it open, one queue's DSCP each, and
// answers each request, an 8-byte size, with that many bytes. A flow takes
// an idle connection of its server and queue, or opens one more when all
// are busy, and returns it when its last byte has arrived.
type fetcher struct {
	hosts []testbed.Host // the servers, h1 to h4
	ln    net.Listener   // the client's, on the bottleneck host
	dst   netip.AddrPort
	idle  [][]chan net.Conn // by server and queue: the client's ends of idle connections
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn // every connection's two ends, closed by close
}

// fetchHello is what a server's connection opens with: its server and
// queue.
const fetchHello = 2

// newFetcher starts the client on client and opens per connections from
// each of the servers in each of queues queues.
func newFetcher(ctx context.Context, client testbed.Host, servers []testbed.Host, queues, per int) (*fetcher, error) {
	ln, err := client.ListenTCP(0)
	if err != nil {
		return nil, err
	}
	f := &fetcher{hosts: servers, ln: ln, dst: netip.AddrPortFrom(client.IPv4, uint16(ln.Addr().(*net.TCPAddr).Port))}
	f.idle = make([][]chan net.Conn, len(servers))
	for h := range f.idle {
		f.idle[h] = make([]chan net.Conn, queues)
		for q := range f.idle[h] {
			f.idle[h][q] = make(chan net.Conn, 1024)
		}
	}
	f.wg.Go(f.accept)
	for h := range servers {
		for q := range queues {
			for range per {
				if err := f.open(ctx, h, q); err != nil {
					return nil, errors.Join(err, f.close())
				}
			}
		}
	}
	return f, nil
}

// accept takes the servers' connections into the idle pools; it ends when
// the listener closes.
func (f *fetcher) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		var hello [fetchHello]byte
		if _, err := io.ReadFull(c, hello[:]); err != nil || int(hello[0]) >= len(f.idle) || int(hello[1]) >= len(f.idle[0]) {
			c.Close()
			continue
		}
		f.keep(c)
		f.idle[hello[0]][hello[1]] <- c
	}
}

// keep records c for close.
func (f *fetcher) keep(c net.Conn) {
	f.mu.Lock()
	f.conns = append(f.conns, c)
	f.mu.Unlock()
}

// open dials one connection from server h in queue q and serves its
// requests until it closes.
func (f *fetcher) open(ctx context.Context, h, q int) error {
	c, err := f.hosts[h].DialTCP(ctx, f.dst, demo.DSCP(q))
	if err != nil {
		return fmt.Errorf("fct: connection from %s: %w", f.hosts[h].Name, err)
	}
	f.keep(c)
	if _, err := c.Write([]byte{byte(h), byte(q)}); err != nil {
		return fmt.Errorf("fct: connection from %s: %w", f.hosts[h].Name, err)
	}
	f.wg.Go(func() { serveRequests(c) })
	return nil
}

// serveRequests answers each 8-byte size read from c with that many bytes.
func serveRequests(c net.Conn) {
	var req [8]byte
	for {
		if _, err := io.ReadFull(c, req[:]); err != nil {
			return
		}
		if _, err := io.CopyN(c, zeros{}, int64(binary.BigEndian.Uint64(req[:]))); err != nil {
			return
		}
	}
}

// fetch fetches size bytes from server h in queue q and returns the flow's
// completion time, from the request's write to the response's last byte;
// a flow that needed a new connection counts its handshake too.
func (f *fetcher) fetch(ctx context.Context, h, q int, size int64) (time.Duration, bool) {
	start := time.Now()
	var c net.Conn
	select {
	case c = <-f.idle[h][q]:
	default:
		if f.open(ctx, h, q) != nil {
			return 0, false
		}
		select {
		case c = <-f.idle[h][q]:
		case <-ctx.Done():
			return 0, false
		}
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], uint64(size))
	if _, err := c.Write(req[:]); err != nil {
		return 0, false
	}
	if _, err := io.CopyN(io.Discard, c, size); err != nil {
		return 0, false
	}
	d := time.Since(start)
	if stop() {
		f.idle[h][q] <- c // only a connection whose deadline was never cut goes back
	}
	return d, true
}

// close closes every connection and the listener, and waits for the
// servers.
func (f *fetcher) close() error {
	err := f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
