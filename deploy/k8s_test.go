package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// manifests is a rendered set of Kubernetes objects, decoded strictly into
// the k8s.io/api types (an unknown or misspelt field fails the decode).
type manifests struct {
	statefulSets []*appsv1.StatefulSet
	deployments  []*appsv1.Deployment
	services     []*corev1.Service
	secrets      []*corev1.Secret
	configMaps   []*corev1.ConfigMap
	namespaces   []*corev1.Namespace
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	pdbs         []*policyv1.PodDisruptionBudget
	netpols      []*networkingv1.NetworkPolicy
}

func decodeManifests(t *testing.T, src string, r io.Reader) *manifests {
	t.Helper()
	m := &manifests{}
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 StatefulSet":
			o := &appsv1.StatefulSet{}
			m.statefulSets, obj = append(m.statefulSets, o), o
		case "apps/v1 Deployment":
			o := &appsv1.Deployment{}
			m.deployments, obj = append(m.deployments, o), o
		case "v1 Service":
			o := &corev1.Service{}
			m.services, obj = append(m.services, o), o
		case "v1 Secret":
			o := &corev1.Secret{}
			m.secrets, obj = append(m.secrets, o), o
		case "v1 ConfigMap":
			o := &corev1.ConfigMap{}
			m.configMaps, obj = append(m.configMaps, o), o
		case "v1 Namespace":
			o := &corev1.Namespace{}
			m.namespaces, obj = append(m.namespaces, o), o
		case "autoscaling/v2 HorizontalPodAutoscaler":
			o := &autoscalingv2.HorizontalPodAutoscaler{}
			m.hpas, obj = append(m.hpas, o), o
		case "policy/v1 PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			m.pdbs, obj = append(m.pdbs, o), o
		case "networking.k8s.io/v1 NetworkPolicy":
			o := &networkingv1.NetworkPolicy{}
			m.netpols, obj = append(m.netpols, o), o
		default:
			t.Fatalf("%s: unexpected object %s %s (add it to the test)", src, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s: %s: %v", src, head.Kind, err)
		}
	}
	return m
}

// render returns the overlay rendered by `kubectl kustomize`, or, where
// kubectl is missing, the base's plain YAML files concatenated (then the
// Secret is absent and only the references within the base are checked).
func render(t *testing.T) (src string, rendered bool, m *manifests) {
	t.Helper()
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		var stderr bytes.Buffer
		cmd := exec.Command(kubectl, "kustomize", "k8s/overlays/example")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl kustomize: %v\n%s", err, stderr.String())
		}
		return "kubectl kustomize k8s/overlays/example", true, decodeManifests(t, "overlay", bytes.NewReader(out))
	}
	t.Log("kubectl not installed: checking the base's plain YAML files, not the rendered overlay")
	files, _ := filepath.Glob("k8s/base/*.yaml")
	var all bytes.Buffer
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		all.WriteString("\n---\n")
	}
	return "k8s/base", false, decodeManifests(t, "base", &all)
}

func TestKubernetesManifests(t *testing.T) {
	src, rendered, m := render(t)
	t.Logf("checked %s: %d StatefulSet, %d Deployment, %d Service, %d Secret, %d HPA, %d PDB, %d NetworkPolicy",
		src, len(m.statefulSets), len(m.deployments), len(m.services), len(m.secrets), len(m.hpas), len(m.pdbs), len(m.netpols))

	if len(m.statefulSets) != 1 || len(m.deployments) != 1 {
		t.Fatalf("want one broker StatefulSet and one gateway Deployment, got %d and %d", len(m.statefulSets), len(m.deployments))
	}
	broker, gateway := m.statefulSets[0], m.deployments[0]

	// The broker: one replica (the vault's only writer), its vault on a PVC.
	if broker.Spec.Replicas == nil || *broker.Spec.Replicas != 1 {
		t.Errorf("broker replicas = %v, want 1", broker.Spec.Replicas)
	}
	if len(broker.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("broker has %d volume claim templates, want 1", len(broker.Spec.VolumeClaimTemplates))
	}
	claim := broker.Spec.VolumeClaimTemplates[0].Name
	bc := container(t, broker.Spec.Template, "broker")
	if !slices.ContainsFunc(bc.VolumeMounts, func(v corev1.VolumeMount) bool { return v.Name == claim && !v.ReadOnly }) {
		t.Errorf("broker does not mount its volume claim %q writable", claim)
	}
	if p := bc.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/v1/healthz" {
		t.Errorf("broker readiness probe %+v, want GET /v1/healthz", p)
	}
	if !slices.ContainsFunc(bc.Env, func(e corev1.EnvVar) bool {
		return e.Name == "OMP_VAULT_KEY" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
	}) {
		t.Error("broker does not take OMP_VAULT_KEY from a Secret")
	}

	// The example overlay adds Litestream: a restore before the broker
	// starts, a replicating sidecar, both on the vault's volume.
	if rendered {
		ls := container(t, broker.Spec.Template, "litestream")
		inits := broker.Spec.Template.Spec.InitContainers
		if len(inits) != 1 || !slices.Contains(inits[0].Args, "restore") || !slices.Contains(inits[0].Args, "-if-db-not-exists") {
			t.Errorf("broker init containers %v: want one litestream restore -if-db-not-exists", inits)
		}
		for _, c := range append(inits, ls) {
			if !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.Name == claim && v.MountPath == "/var/lib/omp" }) {
				t.Errorf("%s does not mount the vault volume at /var/lib/omp", c.Name)
			}
		}
	}

	// The gateways: 3 replicas, an HPA on CPU, a PDB.
	if gateway.Spec.Replicas == nil || *gateway.Spec.Replicas != 3 {
		t.Errorf("gateway replicas = %v, want 3", gateway.Spec.Replicas)
	}
	if p := container(t, gateway.Spec.Template, "gateway").ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("gateway readiness probe %+v, want GET /healthz", p)
	}
	if len(m.hpas) != 1 {
		t.Fatalf("%d HPAs, want 1", len(m.hpas))
	}
	hpa := m.hpas[0]
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != gateway.Name {
		t.Errorf("HPA targets %s/%s, want Deployment/%s", ref.Kind, ref.Name, gateway.Name)
	}
	if len(hpa.Spec.Metrics) == 0 || hpa.Spec.Metrics[0].Resource == nil || hpa.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
		t.Errorf("HPA does not scale on CPU: %+v", hpa.Spec.Metrics)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < *gateway.Spec.Replicas {
		t.Errorf("HPA minReplicas %v below the Deployment's %d", hpa.Spec.MinReplicas, *gateway.Spec.Replicas)
	}
	gwLabels := labels.Set(gateway.Spec.Template.Labels)
	if len(m.pdbs) != 1 || !selects(t, m.pdbs[0].Spec.Selector, gwLabels) {
		t.Errorf("no PodDisruptionBudget selects the gateway pods")
	}

	// Services select their workload's pods.
	brLabels := labels.Set(broker.Spec.Template.Labels)
	for _, svc := range m.services {
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		if len(svc.Spec.Selector) == 0 || (!sel.Matches(brLabels) && !sel.Matches(gwLabels)) {
			t.Errorf("Service %s selects no workload (%v)", svc.Name, svc.Spec.Selector)
		}
	}
	if broker.Spec.ServiceName == "" || !slices.ContainsFunc(m.services, func(s *corev1.Service) bool { return s.Name == broker.Spec.ServiceName }) {
		t.Errorf("broker serviceName %q is not a Service", broker.Spec.ServiceName)
	}

	// Only the gateways (and the operator's namespace) reach the broker.
	if len(m.netpols) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(m.netpols))
	}
	np := m.netpols[0]
	if !selects(t, &np.Spec.PodSelector, brLabels) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("NetworkPolicy %s does not govern the broker's ingress", np.Name)
	}
	var fromGateway, fromNamespace bool
	for _, rule := range np.Spec.Ingress {
		for _, peer := range rule.From {
			switch {
			case peer.PodSelector != nil && peer.NamespaceSelector == nil:
				if !selects(t, peer.PodSelector, gwLabels) {
					t.Errorf("NetworkPolicy admits pods %v that are not the gateways", peer.PodSelector.MatchLabels)
				}
				fromGateway = true
			case peer.NamespaceSelector != nil && peer.PodSelector == nil && len(peer.NamespaceSelector.MatchLabels) > 0:
				fromNamespace = true
			default:
				t.Errorf("NetworkPolicy admits an unexpected peer %+v", peer)
			}
		}
	}
	if !fromGateway || !fromNamespace {
		t.Errorf("NetworkPolicy: from gateways %v, from the operator namespace %v; want both", fromGateway, fromNamespace)
	}

	// Every pod: non-root, read-only root filesystem, resources, probes,
	// scrape annotations; every Secret it names exists with the keys used.
	for name, pod := range map[string]corev1.PodTemplateSpec{"broker": broker.Spec.Template, "gateway": gateway.Spec.Template} {
		checkPod(t, name, pod, m, rendered)
	}
}

func container(t *testing.T, pod corev1.PodTemplateSpec, name string) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no container %q", name)
	}
	return pod.Spec.Containers[i]
}

func selects(t *testing.T, s *metav1.LabelSelector, set labels.Set) bool {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Errorf("selector %v: %v", s, err)
		return false
	}
	return !sel.Empty() && sel.Matches(set)
}

func checkPod(t *testing.T, name string, pod corev1.PodTemplateSpec, m *manifests, rendered bool) {
	t.Helper()
	ps := pod.Spec
	for _, k := range []string{"prometheus.io/scrape", "prometheus.io/port", "prometheus.io/path"} {
		if pod.Annotations[k] == "" {
			t.Errorf("%s: no %s annotation", name, k)
		}
	}
	podNonRoot := ps.SecurityContext != nil && ps.SecurityContext.RunAsNonRoot != nil && *ps.SecurityContext.RunAsNonRoot
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsUser == nil || *ps.SecurityContext.RunAsUser == 0 {
		t.Errorf("%s: pod runAsUser unset or root", name)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		volumes[v.Name] = v
	}
	initC := len(ps.InitContainers)
	for i, c := range append(slices.Clone(ps.InitContainers), ps.Containers...) {
		where := name + "/" + c.Name
		sc := c.SecurityContext
		if !podNonRoot && (sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
			t.Errorf("%s: runAsNonRoot not set", where)
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: root filesystem not read-only", where)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: privilege escalation not disabled", where)
		}
		if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s: capabilities not dropped", where)
		}
		r := c.Resources
		if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
			t.Errorf("%s: resources %+v: want cpu and memory requests and a memory limit", where, r)
		}
		if i >= initC && (c.ReadinessProbe == nil || c.LivenessProbe == nil) { // init containers have none
			t.Errorf("%s: readiness and liveness probes required", where)
		}
		if c.Image == "" {
			t.Errorf("%s: no image", where)
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				checkSecretRef(t, where+" env "+e.Name, m, e.ValueFrom.SecretKeyRef.Name, []string{e.ValueFrom.SecretKeyRef.Key}, rendered)
			}
		}
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil {
				checkSecretRef(t, where+" envFrom", m, ef.SecretRef.Name, nil, rendered)
			}
			if ef.ConfigMapRef != nil {
				checkConfigMapRef(t, where+" envFrom", m, ef.ConfigMapRef.Name, rendered)
			}
		}
		for _, vm := range c.VolumeMounts {
			v, ok := volumes[vm.Name]
			if !ok && !isClaim(name, vm.Name, m) {
				t.Errorf("%s: mounts unknown volume %q", where, vm.Name)
			}
			if ok && v.Secret != nil {
				var keys []string
				for _, it := range v.Secret.Items {
					keys = append(keys, it.Key)
				}
				checkSecretRef(t, where+" volume "+v.Name, m, v.Secret.SecretName, keys, rendered)
			}
			if ok && v.ConfigMap != nil {
				checkConfigMapRef(t, where+" volume "+v.Name, m, v.ConfigMap.Name, rendered)
			}
		}
	}
}

func isClaim(pod, name string, m *manifests) bool {
	if pod != "broker" {
		return false
	}
	return slices.ContainsFunc(m.statefulSets[0].Spec.VolumeClaimTemplates, func(c corev1.PersistentVolumeClaim) bool { return c.Name == name })
}

// checkSecretRef fails unless the rendered set holds Secret name with
// every key. Without a rendered overlay there are no Secrets to resolve
// against (the overlays generate them), so nothing is checked.
func checkSecretRef(t *testing.T, where string, m *manifests, name string, keys []string, rendered bool) {
	t.Helper()
	if !rendered {
		return
	}
	i := slices.IndexFunc(m.secrets, func(s *corev1.Secret) bool { return s.Name == name })
	if i < 0 {
		t.Errorf("%s: Secret %q does not exist", where, name)
		return
	}
	s := m.secrets[i]
	for _, k := range keys {
		_, inData := s.Data[k]
		_, inString := s.StringData[k]
		if !inData && !inString {
			t.Errorf("%s: Secret %s has no key %q", where, name, k)
		}
	}
}

// checkConfigMapRef fails unless the rendered set holds ConfigMap name
// with some data.
func checkConfigMapRef(t *testing.T, where string, m *manifests, name string, rendered bool) {
	t.Helper()
	if !rendered {
		return
	}
	i := slices.IndexFunc(m.configMaps, func(c *corev1.ConfigMap) bool { return c.Name == name })
	if i < 0 || len(m.configMaps[i].Data) == 0 {
		t.Errorf("%s: ConfigMap %q does not exist or is empty", where, name)
	}
}

// TestKubernetesManifestsRejectUnknownFields shows the decode is strict: a
// misspelt field fails.
func TestKubernetesManifestsRejectUnknownFields(t *testing.T) {
	bad := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 3\n"
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(bad), &d); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("strict decode of a misspelt field: %v", err)
	}
}
