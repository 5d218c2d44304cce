package config

import (
	"path/filepath"
	"regexp"
	"strings"
)

// DefaultControlSocket is where the switch takes commands (captures,
// runtime changes), mode 0600: /run/ecnswitch, the unit's RuntimeDirectory.
const DefaultControlSocket = "/run/ecnswitch/ecnswitch.sock"

// maxSocketPath is the longest path a UNIX socket address holds
// (sun_path, less its terminating NUL).
const maxSocketPath = 107

var groupRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$|^[0-9]+$`)

// control checks the control section.
func (c *checker) control(y controlYAML) Control {
	out := Control{Socket: DefaultControlSocket}
	if y.Socket != nil {
		switch p := *y.Socket; {
		case p == "":
			out.Socket = "" // no control socket
		case !filepath.IsAbs(p) || strings.ContainsRune(p, 0):
			c.errf("control.socket", "%q: want an absolute path, e.g. %s, or \"\" for no control socket", p, DefaultControlSocket)
		case len(filepath.Clean(p)) > maxSocketPath:
			c.errf("control.socket", "%q: %d bytes, more than a UNIX socket's path holds (%d)", p, len(filepath.Clean(p)), maxSocketPath)
		default:
			out.Socket = filepath.Clean(p)
		}
	}
	if y.Group != nil && *y.Group != "" {
		if g := *y.Group; !groupRE.MatchString(g) {
			c.errf("control.group", "%q: want a group name (e.g. ecnswitch) or number", g)
		} else {
			out.Group = g
		}
	}
	return out
}
