package buffer

import (
	"errors"
	"fmt"
)

// Limits of a Config.
const (
	// MaxPoolSize is the largest pool, 1 TiB: byte counts stay exact in the
	// float64 arithmetic of the Dynamic Threshold.
	MaxPoolSize = 1 << 40
	// MaxAlpha is the largest DT α, 2^8 (SONiC's mmuconfig takes α as an
	// exponent of two in −8…8).
	MaxAlpha = 256
	// MaxPorts is the number of ports a descriptor can name (packet.Desc.OutPort is a uint16).
	MaxPorts = 1 << 16
	// MaxQueues is the number of queues a descriptor can name per port (packet.Desc.Queue is a uint8).
	MaxQueues = 1 << 8
)

// ErrConfig is wrapped by every error New returns for an invalid Config.
var ErrConfig = errors.New("invalid buffer config")

// Config describes the emulated switch's buffer: its shared pools and, for
// every egress port, the pool it draws from and its queues. The yaml keys
// are the names config errors use.
type Config struct {
	Pools []PoolConfig `yaml:"pools"`
	Ports []PortConfig `yaml:"ports"`
}

// PoolConfig is one shared pool.
type PoolConfig struct {
	// Size is B, the pool's shared buffer in bytes (002 §IV-B Table II), in
	// [1, MaxPoolSize]. Queue reserves are private pools outside it (002 §II-A).
	Size int64 `yaml:"size"`
}

// PortConfig is one egress port: the index of its pool in Config.Pools and
// its queues, indexed as packet.Desc.Queue indexes them.
type PortConfig struct {
	Pool   int           `yaml:"pool"`
	Queues []QueueConfig `yaml:"queues"`
}

// QueueConfig is one egress queue. Exactly one of Alpha and Cap is set: a
// queue's shared occupancy is limited either dynamically or statically.
type QueueConfig struct {
	// Reserve is the queue's private buffer in bytes, used before the
	// shared pool (002 §II-A); 0 means none.
	Reserve int64 `yaml:"reserve"`
	// Alpha is the DT parameter α of 002 §IV-B Eq. 1, in (0, MaxAlpha];
	// it must be 0 when Cap is set.
	Alpha float64 `yaml:"alpha"`
	// Cap, when positive, replaces DT by a static limit: the queue's shared
	// occupancy never exceeds Cap bytes. At most the pool's size.
	Cap int64 `yaml:"cap"`
}

// Validate checks c as New does, and builds nothing. Errors wrap
// ErrConfig and name the first bad key.
func (c Config) Validate() error { return c.validate() }

// validate checks c and returns an error naming the first bad key.
func (c *Config) validate() error {
	if len(c.Pools) == 0 {
		return fmt.Errorf("%w: pools: none configured, want at least 1", ErrConfig)
	}
	if len(c.Ports) == 0 || len(c.Ports) > MaxPorts {
		return fmt.Errorf("%w: ports: %d configured, want 1 to %d", ErrConfig, len(c.Ports), MaxPorts)
	}
	for i, p := range c.Pools {
		if p.Size < 1 || p.Size > MaxPoolSize {
			return fmt.Errorf("%w: pools[%d].size: %d outside [1, %d]", ErrConfig, i, p.Size, int64(MaxPoolSize))
		}
	}
	for i, p := range c.Ports {
		if p.Pool < 0 || p.Pool >= len(c.Pools) {
			return fmt.Errorf("%w: ports[%d].pool: %d outside [0, %d]", ErrConfig, i, p.Pool, len(c.Pools)-1)
		}
		if len(p.Queues) == 0 || len(p.Queues) > MaxQueues {
			return fmt.Errorf("%w: ports[%d].queues: %d configured, want 1 to %d", ErrConfig, i, len(p.Queues), MaxQueues)
		}
		size := c.Pools[p.Pool].Size
		for j, q := range p.Queues {
			if q.Reserve < 0 || q.Reserve > MaxPoolSize {
				return fmt.Errorf("%w: ports[%d].queues[%d].reserve: %d outside [0, %d]", ErrConfig, i, j, q.Reserve, int64(MaxPoolSize))
			}
			if q.Cap < 0 || q.Cap > size {
				return fmt.Errorf("%w: ports[%d].queues[%d].cap: %d outside [0, %d] (the size of pools[%d])", ErrConfig, i, j, q.Cap, size, p.Pool)
			}
			if q.Cap > 0 {
				if q.Alpha != 0 {
					return fmt.Errorf("%w: ports[%d].queues[%d].alpha: %g set with cap %d, want 0 (a queue has a static cap or a DT alpha, not both)", ErrConfig, i, j, q.Alpha, q.Cap)
				}
				continue
			}
			if !(q.Alpha > 0 && q.Alpha <= MaxAlpha) {
				return fmt.Errorf("%w: ports[%d].queues[%d].alpha: %g outside (0, %d] (or set cap for a static limit)", ErrConfig, i, j, q.Alpha, MaxAlpha)
			}
		}
	}
	return nil
}
