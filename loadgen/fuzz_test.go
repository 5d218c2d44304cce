package loadgen

import (
	"math"
	"testing"

	"github.com/ecnswitch/ecnswitch/ports/memport"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// FuzzParseMix checks the load tester's flag parsers (--rate, --size,
// --dscp, --ecn): they never panic, what they accept lies in the ranges
// their docs give, and a generator built from accepted mixes either
// builds or says why, never panics.
func FuzzParseMix(f *testing.F) {
	f.Add("1Gbit", "64,512,1500", "0:50,8:50", "ect0:90,notect:10")
	f.Add("100kpps", "imix", "0", "ce")
	f.Add("max", "64:7,594:4,1518:1", "46", "ect(1)")
	f.Add("2.5Mpps", "64:9223372036854775807,65:1", "0:3037000500,8:1", "ect0:3037000500")
	f.Fuzz(func(t *testing.T, rate, sizes, dscp, ecn string) {
		r, rerr := ParseRate(rate)
		if rerr == nil && (r.Bits < 0 || r.Packets < 0 || math.IsNaN(r.Bits+r.Packets) || math.IsInf(r.Bits+r.Packets, 0) || r.Bits > 0 && r.Packets > 0) {
			t.Fatalf("ParseRate(%q) = %+v", rate, r)
		}
		s, serr := ParseSizes(sizes)
		for _, x := range s {
			if x.Value < MinSize || x.Value > MaxSize || x.Weight <= 0 {
				t.Fatalf("ParseSizes(%q): %+v", sizes, x)
			}
		}
		d, derr := ParseDSCP(dscp)
		for _, x := range d {
			if x.Value > 63 || x.Weight <= 0 {
				t.Fatalf("ParseDSCP(%q): %+v", dscp, x)
			}
		}
		e, eerr := ParseECN(ecn)
		for _, x := range e {
			if x.Value > 3 || x.Weight <= 0 {
				t.Fatalf("ParseECN(%q): %+v", ecn, x)
			}
		}
		if rerr != nil || serr != nil || derr != nil || eerr != nil {
			return
		}
		clk := timestamp.NewVirtual(0)
		a, _, err := memport.Pair("gen", "rx", clk, memport.Link{Capacity: 64})
		if err != nil {
			t.Fatal(err)
		}
		NewGenerator(GeneratorConfig{Rate: r, Count: 1, Sizes: s, DSCP: d, ECN: e}, a, clk) // an error is an answer
	})
}
