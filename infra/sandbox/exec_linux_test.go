//go:build linux

package sandbox

import (
	"os"
	"testing"
)

func TestSpawnPlansOrder(t *testing.T) {
	t.Parallel()
	plans := spawnPlans(1234, 4321)
	if len(plans) < 2 || !plans[0].newNamespaces || plans[len(plans)-1].newNamespaces {
		t.Fatalf("plans = %+v; want namespaces first and a plain fallback last", plans)
	}
	for _, p := range plans {
		if os.Geteuid() == 0 && p.nprocEnforced && (p.uid == 0 || p.uid < 0) {
			t.Errorf("plan %q claims the process limit while running as root", p.name)
		}
		attr := p.sysProcAttr()
		if !attr.Setpgid {
			t.Errorf("plan %q does not start a process group", p.name)
		}
		if p.newNamespaces && (len(attr.UidMappings) != 1 || attr.UidMappings[0].HostID != p.uid || attr.Credential == nil) {
			t.Errorf("plan %q: mappings %+v credential %+v", p.name, attr.UidMappings, attr.Credential)
		}
	}
}
