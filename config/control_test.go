package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestControlAndHosts(t *testing.T) {
	c := mustParse(t, "ports: [{name: p}]\ncontrol: {socket: /run/x/../ecnswitch/s.sock, group: wheel}\ntelemetry: {hosts: [switch1.lab, Prom.Example.]}\n")
	if c.Control != (Control{Socket: "/run/ecnswitch/s.sock", Group: "wheel"}) || !reflect.DeepEqual(c.Telemetry.Hosts, []string{"switch1.lab", "Prom.Example."}) {
		t.Errorf("control %+v, hosts %v", c.Control, c.Telemetry.Hosts)
	}
	if c := mustParse(t, "ports: [{name: p}]\ncontrol: {socket: '', group: '1001'}\n"); c.Control != (Control{Group: "1001"}) {
		t.Errorf("no socket: %+v", c.Control)
	}
	for _, tc := range []struct{ yaml, key, msg string }{
		{"control: {socket: ecnswitch.sock}", "control.socket", `"ecnswitch.sock": want an absolute path`},
		{"control: {socket: /" + strings.Repeat("x", 120) + "}", "control.socket", "more than a UNIX socket's path holds (107)"},
		{"control: {group: 'a b'}", "control.group", `"a b": want a group name`},
		{"control: {grup: x}", "control.grup", "unknown key; allowed here: socket, group"},
		{"telemetry: {hosts: ['evil.example:80']}", "telemetry.hosts[0]", "want a DNS name"},
		{"telemetry: {hosts: ['']}", "telemetry.hosts[0]", "want a DNS name"},
	} {
		_, err := Parse([]byte(tc.yaml + "\nports: [{name: p}]\n"))
		found := false
		for _, e := range errorsOf(err) {
			found = found || e.Key == tc.key && strings.Contains(e.Msg, tc.msg)
		}
		if !found {
			t.Errorf("%s: %v; want %s: %s", tc.yaml, err, tc.key, tc.msg)
		}
	}
}
