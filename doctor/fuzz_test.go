package doctor

import (
	"slices"
	"testing"
)

// FuzzCPUList: cpuList never panics, and what it parses, sorted and
// without repeats, formats to a list that parses back to the same CPUs.
func FuzzCPUList(f *testing.F) {
	for _, s := range []string{"0-3,6", "1", "", "(null)", "0,2-4,7-8\n", "3-1", "8191", "0-8192", "-1", "1,,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := cpuList(s)
		if err != nil {
			return
		}
		slices.Sort(cpus)
		cpus = slices.Compact(cpus)
		for _, c := range cpus {
			if c < 0 || c >= maxCPUs {
				t.Fatalf("cpuList(%q) has CPU %d", s, c)
			}
		}
		back, err := cpuList(formatCPUs(cpus))
		if err != nil || !slices.Equal(back, cpus) {
			t.Fatalf("cpuList(%q) = %v, formatted %q, parsed back %v, %v", s, cpus, formatCPUs(cpus), back, err)
		}
	})
}
