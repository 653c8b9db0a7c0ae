package deploy_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podUID is the runAsUser of the manifests (and the image's user).
const podUID = 65532

// TestKubernetesPodsRun runs the real broker and gateway binaries the way
// the rendered pod specs say: their command, args and environment (Secret
// values resolved from the rendered Secret), each volume a directory under
// a per-pod root, Secret volumes as read-only files owned by root and
// readable through the fsGroup (as kubelet does), and, when the test runs
// as root, as uid 65532 so the read-only parts really are read-only. The
// readiness probes must pass, the gateway must authenticate with its token
// from the Secret, and the broker's vault must land on its volume.
func TestKubernetesPodsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemons")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not installed: the rendered overlay is not available")
	}
	_, _, m := render(t)
	root, err := os.MkdirTemp("", "omp-pods-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	bin := daemons(t)

	brokerPort, gatewayPort := freePort(t), freePort(t)
	hosts := map[string]string{
		"http://omp-broker:8765": fmt.Sprintf("http://127.0.0.1:%d", brokerPort),
	}
	broker := m.statefulSets[0].Spec.Template
	gateway := m.deployments[0].Spec.Template
	bp := runPod(t, m, root, bin, "broker", broker, "broker", map[int32]int{8765: brokerPort}, hosts)
	waitReady(t, bp, brokerPort, container(t, broker, "broker").ReadinessProbe)
	gp := runPod(t, m, root, bin, "gateway", gateway, "gateway", map[int32]int{4000: gatewayPort}, hosts)
	waitReady(t, gp, gatewayPort, container(t, gateway, "gateway").ReadinessProbe)

	defer func() {
		if t.Failed() {
			t.Logf("broker log:\n%s\ngateway log:\n%s", bp.log, gp.log)
		}
	}()
	// The vault is on the broker's volume, nowhere else.
	claim := m.statefulSets[0].Spec.VolumeClaimTemplates[0].Name
	vaultMount := ""
	for _, vm := range container(t, broker, "broker").VolumeMounts {
		if vm.Name == claim {
			vaultMount = vm.MountPath
		}
	}
	found, _ := filepath.Glob(filepath.Join(root, "broker", vaultMount, "*", "vault.db"))
	if len(found) != 1 {
		t.Errorf("no vault on the broker's volume (%s): %v\n%s", vaultMount, found, bp.log.String())
	}

	// Both tokens come from the Secret: the gateway's own (inbound) and
	// the broker's (the gateway's upstream, and /metrics on the broker).
	secret := m.secrets[0]
	for _, s := range m.secrets {
		if _, ok := s.Data["gateway-token"]; ok {
			secret = s
		}
	}
	get := func(port int, path, token string) int {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(gatewayPort, "/v1/models", string(secret.Data["gateway-token"])); code != http.StatusOK {
		t.Errorf("gateway /v1/models with the Secret's gateway token: %d\n%s", code, gp.log.String())
	}
	if code := get(gatewayPort, "/v1/models", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("gateway /v1/models with a wrong token: %d", code)
	}
	if code := get(brokerPort, "/metrics", string(secret.Data["broker-token"])); code != http.StatusOK {
		t.Errorf("broker /metrics with the Secret's broker token: %d", code)
	}
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// daemons builds cmd/broker and cmd/gateway (static, as in the image) once
// per test binary into a world-readable directory (the pods run as 65532)
// and returns it.
func daemons(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "omp-daemons-*")
		if buildErr != nil {
			return
		}
		os.Chmod(binDir, 0o755)
		build := exec.Command("go", "build", "-o", binDir+"/", "./cmd/broker", "./cmd/gateway")
		build.Dir = ".."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

type podProc struct {
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// runPod starts container name of pod with its filesystem under
// root/podName: every mount a directory there, everything else of the
// "root filesystem" read-only.
func runPod(t *testing.T, m *manifests, root, bin, podName string, pod corev1.PodTemplateSpec, name string, ports map[int32]int, hosts map[string]string) *podProc {
	t.Helper()
	c := container(t, pod, name)
	fs := filepath.Join(root, podName)
	asPod := os.Geteuid() == 0
	own := func(p string) {
		if asPod {
			os.Chown(p, podUID, podUID)
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range c.VolumeMounts {
		dir := filepath.Join(fs, vm.MountPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		v, ok := volumes[vm.Name]
		if ok && v.Secret != nil {
			sec := secretNamed(t, m, v.Secret.SecretName)
			mode := os.FileMode(0o644)
			if v.Secret.DefaultMode != nil {
				mode = os.FileMode(*v.Secret.DefaultMode)
			}
			for _, it := range v.Secret.Items {
				p := filepath.Join(dir, it.Path)
				if err := os.WriteFile(p, sec.Data[it.Key], 0o600); err != nil {
					t.Fatal(err)
				}
				// kubelet: root-owned, group = fsGroup, group-readable.
				if asPod {
					os.Chown(p, 0, podUID)
				}
				os.Chmod(p, mode|0o040)
			}
			if asPod {
				os.Chown(dir, 0, podUID)
			}
			os.Chmod(dir, 0o750)
			continue
		}
		// A PVC or an emptyDir: writable by the pod (fsGroup).
		own(dir)
		if vm.MountPath == "/tmp" {
			os.Chmod(dir, 0o1777)
		}
	}
	// The read-only rest of the tree: root-owned, world-traversable.
	filepath.WalkDir(fs, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			st, _ := os.Stat(p)
			if s, ok := st.Sys().(*syscall.Stat_t); ok && s.Uid == 0 && s.Gid == 0 && p != fs {
				os.Chmod(p, 0o755)
			}
		}
		return nil
	})
	os.Chmod(fs, 0o755)

	// Container paths → host paths, longest mount first.
	mounts := []string{}
	for _, vm := range c.VolumeMounts {
		mounts = append(mounts, vm.MountPath)
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	hostPath := func(v string) string {
		if strings.HasPrefix(v, "/") {
			return filepath.Join(fs, v)
		}
		return v
	}
	env := []string{}
	for _, e := range c.Env {
		val := e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			val = string(secretNamed(t, m, e.ValueFrom.SecretKeyRef.Name).Data[e.ValueFrom.SecretKeyRef.Key])
		} else {
			for from, to := range hosts {
				val = strings.ReplaceAll(val, from, to)
			}
			val = hostPath(val)
		}
		env = append(env, e.Name+"="+val)
	}
	if len(c.Command) != 1 {
		t.Fatalf("%s: command %v", name, c.Command)
	}
	args := []string{}
	for _, a := range c.Args {
		for cport, hport := range ports {
			a = strings.ReplaceAll(a, "0.0.0.0:"+strconv.Itoa(int(cport)), "127.0.0.1:"+strconv.Itoa(hport))
		}
		args = append(args, a)
	}
	cmd := exec.Command(filepath.Join(bin, filepath.Base(c.Command[0])), args...)
	cmd.Env = env
	cmd.Dir = fs
	if asPod {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: podUID, Gid: podUID, Groups: []uint32{podUID}}}
	}
	p := &podProc{cmd: cmd, log: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func secretNamed(t *testing.T, m *manifests, name string) *corev1.Secret {
	t.Helper()
	for _, s := range m.secrets {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no Secret %q", name)
	return nil
}

// waitReady polls the readiness probe's path until it answers 200.
func waitReady(t *testing.T, p *podProc, port int, probe *corev1.Probe) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, probe.HTTPGet.Path)
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready:\n%s", p.cmd.Path, p.log.String())
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never ready at %s (%v):\n%s", p.cmd.Path, url, err, p.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
