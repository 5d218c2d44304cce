//go:build linux

package afxdp_test

import (
	"fmt"
	"log"

	"github.com/ecnswitch/ecnswitch/packet"
	"github.com/ecnswitch/ecnswitch/ports"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
)

// A minimal reflector: receive a batch, send it back out. It needs root
// and an interface named eth1, so it is compiled but not run.
func Example() {
	p, err := afxdp.Open("eth1", afxdp.Options{FrameSize: 2048})
	if err != nil {
		log.Fatal(err) // e.g. "interface "eth1" not found: … create it or check the name"
	}
	defer p.Close()
	i := p.Info()
	fmt.Printf("%s: queues %v, %s XDP, zero-copy %v\n", i.Interface, i.Queues, i.Attach, i.ZeroCopy)

	ds := make([]*packet.Desc, ports.BatchSize)
	for j := range ds {
		ds[j] = &packet.Desc{Buf: make([]byte, i.UsableFrame)}
	}
	for {
		n, err := p.Receive(ds)
		if err != nil {
			log.Fatal(err)
		}
		if n == 0 {
			p.Wait(1e6) // idle: sleep up to 1 ms in ppoll
			continue
		}
		for sent := 0; sent < n; {
			k, err := p.Transmit(ds[sent:n])
			if err != nil {
				log.Fatal(err)
			}
			sent += k
		}
	}
}
