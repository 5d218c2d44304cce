//go:build !race && (amd64 || arm64 || ppc64le || riscv64 || s390x || loong64 || mips64 || mips64le)

package counter

// Uint64 is a count with one writing goroutine. The zero value is 0.
type Uint64 struct{ v uint64 }

// Int64 is a signed count with one writing goroutine (a level that goes up
// and down, such as a queue's bytes). The zero value is 0.
type Int64 struct{ v int64 }

// Add adds n. Only the counter's writer may call it.
func (c *Uint64) Add(n uint64) { c.v += n }

// Add adds n (which may be negative) and returns the new count. Only the
// counter's writer may call it.
func (c *Int64) Add(n int64) int64 {
	c.v += n
	return c.v
}
