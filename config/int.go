package config

import (
	"fmt"
	"strconv"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

// intYAML is a port's int section: in-band network telemetry
// (dataplane.INT).
type intYAML struct {
	Port   *int    `yaml:"port"`
	DSCP   *int    `yaml:"dscp"`
	NodeID *uint32 `yaml:"node_id"`
}

// inband checks port i's int section, if it has one, on a port shaped to
// rate, and returns the dataplane's INT. What cannot work is an error at
// its key: nothing to say which packets carry INT headers, a port or DSCP
// out of range, an unshaped port (its records would carry no link rate).
func (c *checker) inband(i int, y *intYAML, rate int64) *dataplane.INT {
	if y == nil {
		return nil
	}
	k := func(sub string) string { return c.portKey(i, "int."+sub) }
	in := &dataplane.INT{}
	ok := true
	if y.Port == nil && y.DSCP == nil {
		c.errf(c.portKey(i, "int"), "neither port nor dscp: name the UDP destination port, or the DSCP, of the packets that carry INT headers")
		ok = false
	}
	if y.Port != nil {
		if p := *y.Port; p < 1 || p > 0xffff {
			c.errf(k("port"), "%d outside [1, 65535]", p)
			ok = false
		} else {
			in.Port = uint16(p)
		}
	}
	if y.DSCP != nil {
		if d := *y.DSCP; d < 0 || d > dataplane.MaxDSCP {
			c.errf(k("dscp"), "%d outside [0, %d]", d, dataplane.MaxDSCP)
			ok = false
		} else {
			code := uint8(d)
			in.DSCP = &code
		}
	}
	if y.NodeID != nil {
		in.NodeID = *y.NodeID
	}
	if rate == 0 {
		c.errf(c.portKey(i, "int"), "on an unshaped port: records carry the port's rate as the link's; set rate")
		ok = false
	}
	if !ok {
		return nil
	}
	return in
}

// intText formats a port's INT for Changes: "port 4790, dscp 26, node 7",
// or "off".
func intText(in *dataplane.INT) string {
	if in == nil {
		return "off"
	}
	s := ""
	if in.Port != 0 {
		s = "port " + strconv.Itoa(int(in.Port))
	}
	if in.DSCP != nil {
		if s != "" {
			s += ", "
		}
		s += "dscp " + strconv.Itoa(int(*in.DSCP))
	}
	return s + fmt.Sprintf(", node %d", in.NodeID)
}
