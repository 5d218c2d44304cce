package loadgen

import (
	"fmt"

	"github.com/ecnswitch/ecnswitch/internal/nsenter"
	"github.com/ecnswitch/ecnswitch/ports/afxdp"
)

// NetnsPort is an AF_XDP port opened inside a named network namespace,
// such as a testbed host's. The socket keeps working from any thread once
// bound; attaching and detaching the XDP program go through netlink by
// interface index, so both run inside the namespace: OpenPort opens it
// there and Close closes it there.
type NetnsPort struct {
	*afxdp.Port
	netns string
}

// OpenPort opens an AF_XDP port on ifname inside the named network
// namespace (as `ip netns` names it; "" is the caller's).
func OpenPort(netns, ifname string, opts afxdp.Options) (*NetnsPort, error) {
	var p *afxdp.Port
	err := inNetns(netns, func() error {
		var err error
		p, err = afxdp.Open(ifname, opts)
		return err
	})
	if err != nil {
		if netns != "" {
			return nil, fmt.Errorf("netns %s: %w", netns, err)
		}
		return nil, err
	}
	return &NetnsPort{Port: p, netns: netns}, nil
}

// Close closes the port inside its namespace.
func (p *NetnsPort) Close() error {
	return inNetns(p.netns, p.Port.Close)
}

// inNetns runs fn in the named namespace ("" runs it here), on a thread
// that never serves another goroutine while switched (nsenter.Do).
func inNetns(netns string, fn func() error) error {
	if netns == "" {
		return fn()
	}
	return nsenter.Do(netns, fn)
}
