package testbed_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/ecnswitch/ecnswitch/testbed"
	"github.com/ecnswitch/ecnswitch/testbed/bulk"
)

// Bring up two hosts, let the switch (here: whatever bridges the switch
// ends) carry 4 bulk TCP flows with DSCP 10 from h1 to h2 for a second, and
// remove everything again. Needs root.
func Example() {
	tb, err := testbed.Up(testbed.Options{Hosts: 2, Subnet: netip.MustParsePrefix("198.18.7.0/24")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tb.Down()
	h1, h2 := tb.Hosts()[0], tb.Hosts()[1]
	for _, h := range tb.Hosts() {
		fmt.Printf("port %s -> %s %s %s\n", h.SwitchIf, h.Name, h.MAC, h.IPv4)
	}
	// ... start ecnswitch on the switch ends here ...

	ln, err := h2.ListenTCP(5001)
	if err != nil {
		fmt.Println(err)
		return
	}
	rcv := bulk.Serve(ln)
	defer rcv.Close()
	res, err := bulk.Sender{
		Dial: func(ctx context.Context) (net.Conn, error) {
			return h1.DialTCP(ctx, netip.AddrPortFrom(h2.IPv4, 5001), 10)
		},
		Flows:    4,
		Duration: time.Second,
	}.Run(context.Background())
	fmt.Println(res.Bytes, err)
}
