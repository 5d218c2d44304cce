package dctcp

// WithName returns o registering the congestion control under name, so
// that a test never touches the machine's dctcp.
func WithName(o Options, name string) Options {
	o.name = name
	return o
}
