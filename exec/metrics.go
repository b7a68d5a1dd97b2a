package exec

import "sync/atomic"

// Counter is a monotonically increasing count, safe to read from other goroutines.
type Counter struct{ v atomic.Int64 }

// Add adds n.
func (c *Counter) Add(n int64) { c.v.Add(n) }

// Load returns the count.
func (c *Counter) Load() int64 { return c.v.Load() }

// Gauge is a value set by its owner and read by observers.
type Gauge struct{ v atomic.Int64 }

// Set sets the value.
func (g *Gauge) Set(n int64) { g.v.Store(n) }

// Load returns the value.
func (g *Gauge) Load() int64 { return g.v.Load() }
