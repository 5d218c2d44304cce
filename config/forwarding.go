package config

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// forwarding checks the forwarding section, resolving port names to
// indexes.
func (c *checker) forwarding(y forwardingYAML, names map[string]int) dataplane.Forwarding {
	fw := dataplane.Forwarding{AgeTime: dataplane.DefaultAgeTime, TableSize: dataplane.DefaultTableSize}
	if y.Learning != nil {
		fw.NoLearning = !*y.Learning
	}
	if y.AgeTime != nil {
		if d := y.AgeTime.D; d < dataplane.MinAgeTime || d > dataplane.MaxAgeTime {
			c.errf("forwarding.age_time", "%q outside [%v, %v]", y.AgeTime, dataplane.MinAgeTime, dataplane.MaxAgeTime)
		} else {
			fw.AgeTime = d
		}
	}
	fw.TableSize = c.intIn("forwarding.table_size", y.TableSize, dataplane.DefaultTableSize, 1, dataplane.MaxTableSize)
	// 0 in the file means no limit, a negative limit in dataplane.Forwarding.
	noLimit := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	fw.MACLimit = noLimit(c.intIn("forwarding.mac_limit", y.MACLimit, dataplane.DefaultMACLimit, 0, dataplane.MaxMACLimit))
	fw.FloodRate = noLimit(c.intIn("forwarding.flood_rate", y.FloodRate, dataplane.DefaultFloodRate, 0, dataplane.MaxFloodRate))
	fw.FloodBurst = c.intIn("forwarding.flood_burst", y.FloodBurst, dataplane.DefaultFloodBurst, 1, dataplane.MaxFloodBurst)
	port := func(key, name string) (int, bool) {
		if name == "" {
			c.errf(key, "missing; want a port name")
			return 0, false
		}
		i, ok := names[name]
		if !ok {
			c.errf(key, "%q is not a port; ports are %s", name, strings.Join(sortedNames(names), ", "))
		}
		return i, ok
	}
	for i, p := range y.Patches {
		key := fmt.Sprintf("forwarding.patches[%d]", i)
		from, ok1 := port(key+".from", p.From)
		to, ok2 := port(key+".to", p.To)
		if ok1 && ok2 {
			if from == to {
				c.errf(key+".to", "%q patched to itself", p.To)
			}
			fw.Patches = append(fw.Patches, dataplane.Patch{From: from, To: to})
		}
	}
	for i, m := range y.MACs {
		key := fmt.Sprintf("forwarding.macs[%d]", i)
		mac, err := net.ParseMAC(m.MAC)
		if err != nil || len(mac) != 6 {
			c.errf(key+".mac", "%q is not a 6-byte MAC address like 02:00:00:00:00:01", m.MAC)
		}
		if p, ok := port(key+".port", m.Port); ok && err == nil && len(mac) == 6 {
			fw.MACs = append(fw.MACs, dataplane.MACRule{MAC: mac, Port: p})
		}
	}
	for i, r := range y.Prefixes {
		key := fmt.Sprintf("forwarding.prefixes[%d]", i)
		pfx, err := netip.ParsePrefix(r.Prefix)
		if err != nil {
			if a, aerr := netip.ParseAddr(r.Prefix); aerr == nil {
				pfx, err = a.Prefix(a.BitLen())
			}
		}
		if err != nil {
			c.errf(key+".prefix", "%q is not an IP prefix like 198.18.0.0/24 or 2001:2::/64", r.Prefix)
		}
		if p, ok := port(key+".port", r.Port); ok && err == nil {
			fw.Prefixes = append(fw.Prefixes, dataplane.PrefixRule{Prefix: pfx, Port: p})
		}
	}
	return fw
}

func sortedNames(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int { return m[a] - m[b] })
	return out
}
