package deploy_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		User        string            `yaml:"user"`
		ReadOnly    bool              `yaml:"read_only"`
		CapDrop     []string          `yaml:"cap_drop"`
		SecurityOpt []string          `yaml:"security_opt"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		DependsOn map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// deploy/compose.yml runs a broker and two gateways, hardened, with the
// vault on a named volume that only the broker mounts. docker-compose
// (Debian package) validates it too where it is installed.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	// Only the fields checked here; docker-compose validates the schema.
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatalf("compose.yml: %v", err)
	}
	if _, ok := cf.Volumes["vault"]; !ok {
		t.Error("no named volume vault")
	}
	var gateways []string
	for name, s := range cf.Services {
		if s.User != "65532:65532" || !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			t.Errorf("%s: user %q read_only %v cap_drop %v security_opt %v: want 65532, read-only, ALL dropped, no-new-privileges", name, s.User, s.ReadOnly, s.CapDrop, s.SecurityOpt)
		}
		if s.Image == "" || len(s.Entrypoint) != 1 {
			t.Errorf("%s: image %q entrypoint %v", name, s.Image, s.Entrypoint)
		}
		mountsVault := slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasPrefix(v, "vault:") || strings.Contains(v, "vault.key") })
		switch s.Entrypoint[0] {
		case "/broker":
			if !slices.Contains(s.Volumes, "vault:/var/lib/omp") || s.Environment["PI_CODING_AGENT_DIR"] != "/var/lib/omp/agent" {
				t.Errorf("%s: the vault is not on the named volume: %v %v", name, s.Volumes, s.Environment)
			}
			if s.Healthcheck == nil || !slices.Contains(s.Healthcheck.Test, "/omp") {
				t.Errorf("%s: no healthcheck through /omp", name)
			}
			if len(s.Ports) > 0 {
				t.Errorf("%s: the broker is published on the host: %v", name, s.Ports)
			}
		case "/gateway":
			gateways = append(gateways, name)
			if mountsVault {
				t.Errorf("%s: a gateway mounts the vault or its key: %v", name, s.Volumes)
			}
			if s.Environment["OMP_AUTH_BROKER_URL"] != "http://broker:8765" {
				t.Errorf("%s: OMP_AUTH_BROKER_URL %q", name, s.Environment["OMP_AUTH_BROKER_URL"])
			}
			if s.DependsOn["broker"].Condition != "service_healthy" {
				t.Errorf("%s: does not wait for a healthy broker", name)
			}
		default:
			t.Errorf("%s: unknown entrypoint %v", name, s.Entrypoint)
		}
	}
	if len(gateways) != 2 {
		t.Errorf("gateways %v, want 2", gateways)
	}

	dc, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Log("docker-compose not installed: checked with the YAML decoder only")
		return
	}
	out, err := exec.Command(dc, "-f", "compose.yml", "config", "-q").CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("docker-compose config: %v\n%s", err, out)
	}
}
