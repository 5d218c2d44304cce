package config

import (
	"fmt"
	"strconv"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
)

// DefaultPoolName names the pool of a file that lists none, of
// dataplane.DefaultPoolSize bytes.
const DefaultPoolName = "default"

// pools checks the shared buffer pools.
func (c *checker) pools(cfg *Config, pools []poolYAML) {
	if len(pools) == 0 {
		cfg.Pools = []string{DefaultPoolName}
		cfg.Switch.Pools = []buffer.PoolConfig{{Size: dataplane.DefaultPoolSize}}
		return
	}
	seen := map[string]int{}
	for i, p := range pools {
		key := fmt.Sprintf("pools[%d]", i)
		if p.Name == "" || !validName(p.Name) {
			c.errf(key+".name", "%q: want 1 to %d letters, digits, '_', '.', ':' or '-'", p.Name, maxNameLen)
		} else if j, dup := seen[p.Name]; dup {
			c.errf(key+".name", "%q already names pools[%d]", p.Name, j)
		}
		seen[p.Name] = i
		size := int64(0)
		if p.Size == nil {
			c.errf(key+".size", "missing; want the pool's shared buffer in (0, %s]", FormatSize(buffer.MaxPoolSize))
		} else if size = p.Size.N; size < 1 || size > buffer.MaxPoolSize {
			c.errf(key+".size", "%q outside [1, %s]", p.Size, FormatSize(buffer.MaxPoolSize))
		}
		cfg.Pools = append(cfg.Pools, p.Name)
		cfg.Switch.Pools = append(cfg.Switch.Pools, buffer.PoolConfig{Size: size})
	}
}

// buffer checks port i's buffer section: one QueueConfig per queue.
func (c *checker) buffer(i int, y *bufferYAML, nq int, poolSize int64) []buffer.QueueConfig {
	k := func(sub string) string { return c.portKey(i, "buffer."+sub) }
	base := buffer.QueueConfig{Alpha: dataplane.DefaultAlpha}
	check := func(prefix string, q bufferQueueYAML, qc *buffer.QueueConfig) {
		if q.Alpha != nil && q.Cap != nil && q.Cap.N > 0 {
			c.errf(k(prefix+"alpha"), "%g set with cap %q; a queue has a Dynamic Threshold alpha or a static cap, not both", *q.Alpha, q.Cap)
			return
		}
		if q.Alpha != nil {
			if a := *q.Alpha; !(a > 0 && a <= buffer.MaxAlpha) {
				c.errf(k(prefix+"alpha"), "%g outside (0, %d]", a, buffer.MaxAlpha)
			} else {
				qc.Alpha, qc.Cap = a, 0
			}
		}
		if q.Cap != nil {
			if cp := q.Cap.N; cp < 0 || cp > poolSize {
				c.errf(k(prefix+"cap"), "%q outside [0, %s] (the pool's size)", q.Cap, FormatSize(poolSize))
			} else if cp > 0 {
				qc.Cap, qc.Alpha = cp, 0
			} else if qc.Alpha == 0 {
				qc.Cap, qc.Alpha = 0, dataplane.DefaultAlpha
			}
		}
		if q.Reserve != nil {
			if r := q.Reserve.N; r < 0 || r > buffer.MaxPoolSize {
				c.errf(k(prefix+"reserve"), "%q outside [0, %s]", q.Reserve, FormatSize(buffer.MaxPoolSize))
			} else {
				qc.Reserve = r
			}
		}
	}
	check("", y.bufferQueueYAML, &base)
	out := make([]buffer.QueueConfig, nq)
	for q := range out {
		out[q] = base
	}
	for _, q := range sortedKeys(y.Queues) {
		prefix := "queues." + strconv.Itoa(q) + "."
		if q < 0 || q >= nq {
			c.errf(k("queues."+strconv.Itoa(q)), "queue %d outside [0, %d] (the port has %d queues)", q, nq-1, nq)
			continue
		}
		check(prefix, y.Queues[q], &out[q])
	}
	return out
}
