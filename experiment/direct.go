package experiment

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/ecnswitch/ecnswitch/testbed"
)

// A direct veth pair between two testbed hosts, beside their links to the
// switch: 004 §VI-A measures the noise of RTT samples between two hosts
// cabled back to back (Fig. 10, 11), and dx-steps measures it so as well
// as through the switch. Each host routes the other's address (a /32,
// which wins over the testbed's subnet route) over the pair, so that
// their traffic skips the switch while the pair is up; the pair adds no
// address.

// directPair links hosts a and b by a veth pair named after tag (at most
// 11 bytes: each end adds its letter and one more), and returns the
// function that removes it. The testbed's Down removes it too, with the
// hosts' namespaces.
func directPair(a, b testbed.Host, tag string) (remove func() error, err error) {
	if len(tag) > 11 {
		return nil, fmt.Errorf("direct pair: tag %q longer than 11 bytes", tag)
	}
	nsA, err := netns.GetFromPath(filepath.Join("/run/netns", a.Netns))
	if err != nil {
		return nil, fmt.Errorf("direct pair: %s: %w", a.Name, err)
	}
	defer nsA.Close()
	nsB, err := netns.GetFromPath(filepath.Join("/run/netns", b.Netns))
	if err != nil {
		return nil, fmt.Errorf("direct pair: %s: %w", b.Name, err)
	}
	defer nsB.Close()
	nameA, nameB := tag+"da", tag+"db"
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU, la.Namespace = nameA, 1500, netlink.NsFd(int(nsA))
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: nameB, PeerNamespace: netlink.NsFd(int(nsB))}); err != nil {
		return nil, fmt.Errorf("direct pair %s–%s: %w", a.Name, b.Name, err)
	}
	remove = func() error {
		ns, err := netns.GetFromPath(filepath.Join("/run/netns", a.Netns)) // nsA is closed by now
		if err != nil {
			return fmt.Errorf("direct pair: %s: %w", a.Name, err)
		}
		defer ns.Close()
		h, err := netlink.NewHandleAt(ns)
		if err != nil {
			return fmt.Errorf("direct pair: %s: %w", a.Name, err)
		}
		defer h.Close()
		l, err := h.LinkByName(nameA)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				return nil
			}
			return fmt.Errorf("direct pair: %s: %w", a.Name, err)
		}
		if err := h.LinkDel(l); err != nil {
			return fmt.Errorf("direct pair: remove %s: %w", nameA, err)
		}
		return nil
	}
	for _, e := range []struct {
		ns        netns.NsHandle
		name      string
		self, via testbed.Host
	}{{nsA, nameA, a, b}, {nsB, nameB, b, a}} {
		if err := routeOver(e.ns, e.name, e.self, e.via); err != nil {
			return nil, errors.Join(err, remove())
		}
	}
	return remove, nil
}

// routeOver brings link up in ns and routes peer's address over it, from
// self's.
func routeOver(ns netns.NsHandle, link string, self, peer testbed.Host) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("direct pair: %s: %w", self.Name, err)
	}
	defer h.Close()
	l, err := h.LinkByName(link)
	if err != nil {
		return fmt.Errorf("direct pair: %s: %w", self.Name, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("direct pair: %s: up %s: %w", self.Name, link, err)
	}
	dst := &net.IPNet{IP: peer.IPv4.AsSlice(), Mask: net.CIDRMask(32, 32)}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: dst, Src: self.IPv4.AsSlice(), Scope: netlink.SCOPE_LINK}); err != nil {
		return fmt.Errorf("direct pair: %s: route %s over %s: %w", self.Name, dst, link, err)
	}
	return nil
}
