package dataplane

import "testing"

func TestPlace(t *testing.T) {
	for _, c := range []struct {
		allowed          []int
		workers          int
		wantW, wantOther string
	}{
		{[]int{0, 1}, 1, "1", "0"},
		{[]int{0, 1, 2, 3}, 2, "2-3", "0-1"},
		{[]int{1, 3, 5}, 1, "5", "1,3"},
		{[]int{0}, 1, "none", "0"},
		{[]int{0, 1}, 2, "none", "0-1"},
	} {
		p := place(c.allowed, c.workers)
		if FormatCPUs(p.Workers) != c.wantW || FormatCPUs(p.Others) != c.wantOther {
			t.Errorf("place(%v, %d) = %v / %v, want %s / %s", c.allowed, c.workers, p.Workers, p.Others, c.wantW, c.wantOther)
		}
	}
}
