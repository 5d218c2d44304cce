package experiment

import (
	"errors"
	"io"
	"net"
	"sync"
)

// TCP traffic that fct's flows and ecnsharp-incast's background share.

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// sink accepts flows, reads each to its end and closes it, which tells the
// sender its flow is complete.
type sink struct {
	ln net.Listener
	wg sync.WaitGroup
}

func serveSink(ln net.Listener) *sink {
	s := &sink{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() {
				defer c.Close()
				io.Copy(io.Discard, c)
			})
		}
	})
	return s
}

func (s *sink) close() error {
	err := s.ln.Close()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
