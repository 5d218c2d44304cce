package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/marking"
	"github.com/ecnswitch/ecnswitch/scheduler"
)

// stepThresh is tc-dualpi2's step_thresh: a time (1ms) or a number of
// packets (5pkt).
type stepThresh struct {
	d       Duration
	packets int64 // > 0: the step is in packets
	raw     string
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *stepThresh) UnmarshalYAML(n *yaml.Node) error {
	v, err := scalar(n, "a step threshold")
	if err != nil {
		return err
	}
	if m := pktRE.FindStringSubmatch(v); m != nil {
		p, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || p == 0 {
			return nodeError(n, "%q: want a positive number of packets", v)
		}
		*s = stepThresh{packets: p, raw: v}
		return nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return nodeError(n, "%q is not a step threshold; want a time (1ms) or packets (5pkt)", v)
	}
	*s = stepThresh{d: Duration{D: d, raw: v}, raw: v}
	return nil
}

// dualqKeys are the scheduler keys of kind dualq alone, for the error a
// port of another kind gets.
var dualqKeys = []string{"target", "tupdate", "alpha", "coupling_factor", "step_thresh", "min_qlen_step",
	"ramp_range", "drop_on_overload", "ecn_mask", "classic_protection", "tshift", "dscp", "seed"}

// notDualQ reports the dualq keys set on port i's scheduler of kind kind.
func (c *checker) notDualQ(i int, kind scheduler.Kind) {
	for _, key := range dualqKeys {
		if k := c.portKey(i, "scheduler."+key); c.ix.has(k) {
			c.errf(k, "a key of scheduler kind dualq, not %v", kind)
		}
	}
}

// dualq checks port i's scheduler section of kind dualq: tc-dualpi2's
// keys, checked against marking's DualPI2Params, the classic protection
// and the classifier.
func (c *checker) dualq(i int, y *schedulerYAML, sc scheduler.Config) (scheduler.Config, dataplane.DualQ) {
	k := func(sub string) string { return c.portKey(i, "scheduler."+sub) }
	sc.Kind, sc.NumQueues = scheduler.DualQ, 2
	if len(y.Queues) > 0 {
		c.errf(k("queues"), "per-queue settings on a dualq; its two queues' weights come from classic_protection")
	}
	if y.TIdle != nil {
		c.errf(k("t_idle"), "a key of the round-robin kinds, not dualq")
	}
	params := map[string]marking.Param{}
	for _, p := range marking.DualPI2Params() {
		params[p.Key] = p
	}
	// ok checks a value of key against its parameter's range.
	ok := func(key string, v any, text string) bool {
		p := params[key]
		if err := p.Check(v); err != nil {
			c.errf(k(key), "%s outside %s", text, FormatRange(p))
			return false
		}
		return true
	}
	var d dataplane.DualQ
	a := &d.AQM
	if y.Target != nil && ok("target", int64(y.Target.D), strconv.Quote(y.Target.String())) {
		a.Target = int64(y.Target.D)
	}
	if y.TUpdate != nil && ok("tupdate", int64(y.TUpdate.D), strconv.Quote(y.TUpdate.String())) {
		a.TUpdate = int64(y.TUpdate.D)
	}
	if y.Alpha != nil && ok("alpha", *y.Alpha, fmt.Sprint(*y.Alpha)) {
		a.Alpha = *y.Alpha
	}
	if y.Beta != nil && ok("beta", *y.Beta, fmt.Sprint(*y.Beta)) {
		a.Beta = *y.Beta
	}
	if y.CouplingFactor != nil && ok("coupling_factor", *y.CouplingFactor, fmt.Sprint(*y.CouplingFactor)) {
		a.Coupling = *y.CouplingFactor
	}
	switch st := y.StepThresh; {
	case st == nil:
	case st.packets > 0:
		if p := params["min_qlen_step"]; !p.Range.Contains(float64(st.packets)) {
			c.errf(k("step_thresh"), "%q outside [1, %s] packets", st.raw, strconv.FormatFloat(p.Range.Max, 'f', -1, 64))
		} else {
			a.StepPackets = st.packets
		}
	case ok("step_thresh", int64(st.d.D), strconv.Quote(st.raw)):
		a.StepThresh = int64(st.d.D)
	}
	if y.MinQlenStep != nil && ok("min_qlen_step", *y.MinQlenStep, fmt.Sprint(*y.MinQlenStep)) {
		a.MinQlenStep = *y.MinQlenStep
	}
	if y.RampRange != nil && ok("ramp_range", int64(y.RampRange.D), strconv.Quote(y.RampRange.String())) {
		a.RampRange = int64(y.RampRange.D)
	}
	a.Overflow = y.DropOnOverload != nil && !*y.DropOnOverload
	if y.Seed != nil {
		a.Seed = *y.Seed
	}
	if a.StepPackets > 0 && a.RampRange > 0 {
		c.errf(k("ramp_range"), "a ramp of sojourn times needs step_thresh as a time, not %s", y.StepThresh.raw)
	} else if _, err := marking.NewDualPI2(*a); err != nil {
		var pe *marking.ParamError
		at := k("")
		if errors.As(err, &pe) && pe.Key != "" {
			at = k(pe.Key)
		}
		c.errf(strings.TrimSuffix(at, "."), "%v", err)
	}

	if c.oneOf(k("ecn_mask"), y.ECNMask, marking.ECNMaskL4S.String(), marking.ECNMaskL4S.String(), marking.ECNMaskAny.String()) == marking.ECNMaskAny.String() {
		d.ECNMask = marking.ECNMaskAny
	}
	switch p := c.intIn(k("classic_protection"), y.ClassicProtection, scheduler.DefaultClassicProtection, 0, 100); p {
	case 0:
		sc.ClassicProtection = scheduler.NoClassicProtection
	default:
		sc.ClassicProtection = p
	}
	if y.TShift != nil {
		if t := y.TShift.D; t < 0 || t > scheduler.MaxTShift {
			c.errf(k("tshift"), "%q outside [0, %v]", y.TShift, scheduler.MaxTShift)
		} else {
			sc.TShift = t
		}
	}
	for _, code := range sortedKeys(y.DSCP) {
		key := k("dscp." + strconv.Itoa(code))
		q := -1
		switch y.DSCP[code] {
		case "classic":
			q = scheduler.DualQClassic
		case "l4s":
			q = scheduler.DualQL4S
		default:
			c.errf(key, "%q is not one of classic, l4s", y.DSCP[code])
			continue
		}
		if code < 0 || code > dataplane.MaxDSCP {
			c.errf(key, "DSCP %d outside [0, %d]", code, dataplane.MaxDSCP)
			continue
		}
		if d.DSCP == nil {
			d.DSCP = map[uint8]int{}
		}
		d.DSCP[uint8(code)] = q
	}
	return sc, d
}
