package experiment

import (
	"bufio"
	"embed"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

//go:embed workloads/*.cdf
var workloadFiles embed.FS

// Workloads returns the names of the shipped flow-size distributions.
func Workloads() []string { return []string{"web-search", "data-mining"} }

// Workload returns the shipped flow-size distribution called name (see
// Workloads), read from workloads/NAME.cdf, whose header cites its source.
func Workload(name string) (*CDF, error) {
	f, err := workloadFiles.Open("workloads/" + name + ".cdf")
	if err != nil {
		return nil, fmt.Errorf("experiment: workload %q: want one of %s", name, strings.Join(Workloads(), ", "))
	}
	defer f.Close()
	return ParseCDF(name, f)
}

// CDF is a flow-size distribution given by points of its cumulative
// distribution function, linear between them: the form the papers'
// simulations draw flow sizes from.
type CDF struct {
	Name  string
	sizes []float64 // bytes, nondecreasing
	probs []float64 // fraction of flows no larger, nondecreasing from 0 to 1
}

// maxFlowSize bounds a CDF's sizes: 1 TB.
const maxFlowSize = 1e12

// ParseCDF reads a CDF: one point a line, the flow size in bytes and the
// fraction of flows no larger, separated by blanks; '#' starts a comment.
// The sizes must be positive and nondecreasing, the fractions nondecreasing
// from 0 on the first line to 1 on the last.
func ParseCDF(name string, r io.Reader) (*CDF, error) {
	c := &CDF{Name: name}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("experiment: cdf %s: line %d: %d fields, want 2 (size in bytes, fraction of flows no larger)", name, n, len(fields))
		}
		size, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || !(size >= 1 && size <= maxFlowSize) {
			return nil, fmt.Errorf("experiment: cdf %s: line %d: size %q outside [1, %g] bytes", name, n, fields[0], maxFlowSize)
		}
		p, err := strconv.ParseFloat(fields[1], 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("experiment: cdf %s: line %d: fraction %q outside [0, 1]", name, n, fields[1])
		}
		if k := len(c.sizes); k > 0 && (size < c.sizes[k-1] || p < c.probs[k-1]) {
			return nil, fmt.Errorf("experiment: cdf %s: line %d: point (%g, %g) below the previous (%g, %g): sizes and fractions must not decrease",
				name, n, size, p, c.sizes[k-1], c.probs[k-1])
		}
		c.sizes, c.probs = append(c.sizes, size), append(c.probs, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("experiment: cdf %s: %w", name, err)
	}
	switch k := len(c.probs); {
	case k < 2:
		return nil, fmt.Errorf("experiment: cdf %s: %d points, want at least 2", name, k)
	case c.probs[0] != 0:
		return nil, fmt.Errorf("experiment: cdf %s: first fraction %g, want 0 (the smallest size)", name, c.probs[0])
	case c.probs[k-1] != 1:
		return nil, fmt.Errorf("experiment: cdf %s: last fraction %g, want 1 (the largest size)", name, c.probs[k-1])
	}
	return c, nil
}

// Quantile returns the size no larger than a fraction u of the flows, for
// u in [0, 1]: the inverse of the CDF, linear between its points. A
// uniform u in [0, 1) draws a flow size.
func (c *CDF) Quantile(u float64) int64 {
	u = min(max(u, 0), 1)
	i := sort.SearchFloat64s(c.probs, u) // first point with probs[i] ≥ u
	if i == 0 {
		return int64(math.Round(c.sizes[0]))
	}
	p0, p1 := c.probs[i-1], c.probs[i]
	s0, s1 := c.sizes[i-1], c.sizes[i]
	return int64(math.Round(s0 + (s1-s0)*(u-p0)/(p1-p0)))
}

// Mean returns the mean flow size in bytes: the integral of the sizes over
// the fractions, each segment's mean its midpoint.
func (c *CDF) Mean() float64 {
	var m float64
	for i := 1; i < len(c.sizes); i++ {
		m += (c.probs[i] - c.probs[i-1]) * (c.sizes[i] + c.sizes[i-1]) / 2
	}
	return m
}

// FlowRate returns the Poisson arrival rate, in flows per second, that
// offers load (a fraction of C) to a link of rate bit/s: λ = load·C /
// (8·mean size), as the papers set their loads (001 §5.1.2).
func (c *CDF) FlowRate(load float64, rate int64) float64 {
	return load * float64(rate) / (8 * c.Mean())
}
