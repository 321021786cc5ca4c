package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// injected is what a value tries to add to the Deployment's Pod spec when
// the template pastes it into the YAML unquoted.
const injected = "x\nhostNetwork: true\nhostPID: true"

// valuesFileArgs writes values, a YAML document, to a file and returns the
// arguments of `helm template` for the test release with it: --set cannot
// carry a newline.
func valuesFileArgs(t *testing.T, values string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return append(templateArgs(), "-f", path)
}

// valuesYAML returns a values document setting the value at path (keys
// separated by dots, a list when the last key ends with []) to s.
func valuesYAML(t *testing.T, path, s string) string {
	t.Helper()
	keys := strings.Split(path, ".")
	var v any = s
	if last, ok := strings.CutSuffix(keys[len(keys)-1], "[]"); ok {
		keys[len(keys)-1], v = last, []any{s}
	}
	for _, key := range slices.Backward(keys) {
		v = map[string]any{key: v}
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSchemaRefusesYAMLInjection sets every string value the templates
// paste into YAML to text with a newline or with characters YAML reads as
// syntax: values.schema.json refuses each at helm template, naming it.
func TestSchemaRefusesYAMLInjection(t *testing.T) {
	paths := map[string]string{
		"priorityClassName":                    "/priorityClassName",
		"image.repository":                     "/image/repository",
		"image.tag":                            "/image/tag",
		"nameOverride":                         "/nameOverride",
		"fullnameOverride":                     "/fullnameOverride",
		"serviceAccount.name":                  "/serviceAccount/name",
		"leaderElectionID":                     "/leaderElectionID",
		"watchNamespaces[]":                    "/watchNamespaces/0",
		"shards[]":                             "/shards/0",
		"deniedAddressCIDRs[]":                 "/deniedAddressCIDRs/0",
		"allowedAddressCIDRs[]":                "/allowedAddressCIDRs/0",
		"defaultProbeInterval":                 "/defaultProbeInterval",
		"extraArgs[]":                          "/extraArgs/0",
		"metrics.serviceMonitor.interval":      "/metrics/serviceMonitor/interval",
		"metrics.prometheusRule.runbookURL":    "/metrics/prometheusRule/runbookURL",
		"metrics.prometheusRule.staleLock.for": "/metrics/prometheusRule/staleLock/for",
		"metrics.prometheusRule.backendUnreachable.severity": "/metrics/prometheusRule/backendUnreachable/severity",
		"budgets.readMemoryPerNamespace":                     "/budgets/readMemoryPerNamespace",
		"budgets.readMemoryTotal":                            "/budgets/readMemoryTotal",
		"budgets.apiStoragePerNamespace":                     "/budgets/apiStoragePerNamespace",
		"budgets.apiStorageTotal":                            "/budgets/apiStorageTotal",
		"budgets.keyDerivationCPUPerNamespace":               "/budgets/keyDerivationCPUPerNamespace",
		"budgets.keyDerivationCPUTotal":                      "/budgets/keyDerivationCPUTotal",
	}
	texts := map[string]string{
		"keys after a newline": injected,
		"a flow mapping":       "{hostNetwork: true}",
		"a comment":            "x #hostNetwork",
		"a mapping":            "x: y",
	}
	// extraArgs are quoted and may hold YAML syntax, as flag values do; a
	// newline they may not.
	yamlSyntaxAllowed := map[string]bool{"extraArgs[]": true}
	for path, at := range paths {
		for textName, text := range texts {
			if textName != "keys after a newline" && yamlSyntaxAllowed[path] {
				continue
			}
			t.Run(path+" with "+textName, func(t *testing.T) {
				t.Parallel()
				value := text
				if path == "extraArgs[]" {
					value = "--" + text
				}
				_, stderr, err := testtools.RunHelm(t.Context(), t, valuesFileArgs(t, valuesYAML(t, path, value))...)
				if err == nil {
					t.Fatalf("helm template with %s = %q succeeded, want the schema to refuse it", path, value)
				}
				if want := "at '" + at + "'"; !strings.Contains(stderr, want) {
					t.Errorf("helm template with %s = %q failed with\n%s\nwant a message containing %q", path, value, stderr, want)
				}
			})
		}
	}
}

// TestValuesAddNoKeys sets values the schema accepts to text that would add
// keys to the Pod spec if pasted unquoted: the Deployment decodes strictly,
// holds each value as given, and runs without the host's network or PIDs.
func TestValuesAddNoKeys(t *testing.T) {
	cases := map[string]struct {
		path  string
		value string
		check func(t *testing.T, d appsv1.Deployment, value string)
	}{
		"an extra argument": {
			path: "extraArgs[]", value: "--zap-log-level=debug: hostNetwork: true #x",
			check: func(t *testing.T, d appsv1.Deployment, value string) {
				t.Helper()
				if args := managerContainer(t, d).Args; !slices.Contains(args, value) {
					t.Errorf("args %q lack %q", args, value)
				}
			},
		},
		"a Pod annotation": {
			path: "podAnnotations.note", value: injected,
			check: func(t *testing.T, d appsv1.Deployment, value string) {
				t.Helper()
				if got := d.Spec.Template.Annotations["note"]; got != value {
					t.Errorf("annotation note = %q, want %q", got, value)
				}
			},
		},
		"a Pod label": {
			path: "podLabels.team", value: "a: b",
			check: func(t *testing.T, d appsv1.Deployment, value string) {
				t.Helper()
				if got := d.Spec.Template.Labels["team"]; got != value {
					t.Errorf("label team = %q, want %q", got, value)
				}
			},
		},
		"a node selector": {
			path: "nodeSelector.pool", value: injected,
			check: func(t *testing.T, d appsv1.Deployment, value string) {
				t.Helper()
				if got := d.Spec.Template.Spec.NodeSelector["pool"]; got != value {
					t.Errorf("nodeSelector pool = %q, want %q", got, value)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			docs := splitDocuments(t, []byte(render(t, valuesFileArgs(t, valuesYAML(t, tc.path, tc.value))...)))
			d := decode[appsv1.Deployment](t, find(t, docs, "Deployment", releaseNamespace, prefix))
			if pod := d.Spec.Template.Spec; pod.HostNetwork || pod.HostPID {
				t.Errorf("hostNetwork %v, hostPID %v; want neither", pod.HostNetwork, pod.HostPID)
			}
			tc.check(t, d, tc.value)
		})
	}
}

// TestAddressCIDRsSchema checks that the address lists take IPv4 and IPv6
// CIDRs, or single addresses, and nothing else.
func TestAddressCIDRsSchema(t *testing.T) {
	cases := map[string]struct {
		cidr string
		ok   bool
	}{
		"an IPv4 CIDR":                {cidr: "10.96.0.0/12", ok: true},
		"an IPv4 address":             {cidr: "192.0.2.7", ok: true},
		"an IPv6 CIDR":                {cidr: "2001:db8::/32", ok: true},
		"an IPv6 address":             {cidr: "fd00:ec2::254", ok: true},
		"an IPv4-mapped IPv6 CIDR":    {cidr: "::ffff:10.0.0.0/104", ok: true},
		"everything":                  {cidr: "0.0.0.0/0", ok: true},
		"an IPv4 prefix over 32":      {cidr: "10.0.0.0/33"},
		"an IPv4 octet over 255":      {cidr: "10.0.0.256/8"},
		"three octets":                {cidr: "10.0.0/8"},
		"an IPv6 prefix over 128":     {cidr: "fe80::/129"},
		"two double colons":           {cidr: "fe80::1::/64"},
		"nine IPv6 groups":            {cidr: "1:2:3:4:5:6:7:8:9/64"},
		"a name":                      {cidr: "metadata.google.internal"},
		"a CIDR and a trailing space": {cidr: "10.0.0.0/8 "},
	}
	for name, tc := range cases {
		for _, list := range []string{"deniedAddressCIDRs", "allowedAddressCIDRs"} {
			t.Run(list+" with "+name, func(t *testing.T) {
				t.Parallel()
				_, stderr, err := testtools.RunHelm(t.Context(), t, valuesFileArgs(t, valuesYAML(t, list+"[]", tc.cidr))...)
				switch {
				case tc.ok && err != nil:
					t.Errorf("helm template with %s [%q] failed: %v\n%s", list, tc.cidr, err, stderr)
				case !tc.ok && err == nil:
					t.Errorf("helm template with %s [%q] succeeded, want the schema to refuse it", list, tc.cidr)
				case !tc.ok && !strings.Contains(stderr, "at '/"+list+"/0'"):
					t.Errorf("helm template with %s [%q] failed with\n%s\nwant a message naming /%s/0", list, tc.cidr, stderr, list)
				}
			})
		}
	}
}

// TestEmptyDenyListMeansTheDefault checks that an empty or null
// deniedAddressCIDRs renders the default deny list, the one of
// config/manager, and never an empty --denied-address-cidrs (which would
// deny nothing).
func TestEmptyDenyListMeansTheDefault(t *testing.T) {
	var want string
	for _, arg := range managerContainer(t, configManager(t)).Args {
		if strings.HasPrefix(arg, "--denied-address-cidrs=") {
			want = arg
		}
	}
	if want == "" {
		t.Fatal("config/manager sets no --denied-address-cidrs")
	}
	cases := map[string]string{
		"the default values": "",
		"an empty list":      "deniedAddressCIDRs: []\n",
		"null":               "deniedAddressCIDRs: null\n",
	}
	for name, values := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			docs := splitDocuments(t, []byte(render(t, valuesFileArgs(t, values)...)))
			d := decode[appsv1.Deployment](t, find(t, docs, "Deployment", releaseNamespace, prefix))
			var got []string
			for _, arg := range managerContainer(t, d).Args {
				if strings.HasPrefix(arg, "--denied-address-cidrs") {
					got = append(got, arg)
				}
			}
			if diff := cmp.Diff([]string{want}, got); diff != "" {
				t.Errorf("deny list arguments (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTemplatesQuoteStrings renders, without the schema (helm template
// --skip-schema-validation), every string value the templates paste into
// the Deployment set to text that would add hostNetwork and hostPID if
// pasted unquoted: the templates quote each, so the Deployment decodes
// strictly, without them, and holds the text where the value goes.
func TestTemplatesQuoteStrings(t *testing.T) {
	cases := map[string]struct {
		path string
		// got returns where the value shows in the Deployment.
		got func(t *testing.T, d appsv1.Deployment) []string
	}{
		"priorityClassName": {path: "priorityClassName", got: func(_ *testing.T, d appsv1.Deployment) []string {
			return []string{d.Spec.Template.Spec.PriorityClassName}
		}},
		"image.repository": {path: "image.repository", got: func(t *testing.T, d appsv1.Deployment) []string {
			t.Helper()
			return []string{managerContainer(t, d).Image}
		}},
		"serviceAccount.name": {path: "serviceAccount.name", got: func(_ *testing.T, d appsv1.Deployment) []string {
			return []string{d.Spec.Template.Spec.ServiceAccountName}
		}},
		"leaderElectionID":     {path: "leaderElectionID", got: argsOf},
		"watchNamespaces":      {path: "watchNamespaces[]", got: argsOf},
		"defaultProbeInterval": {path: "defaultProbeInterval", got: argsOf},
		"readMemoryShare":      {path: "budgets.readMemoryPerNamespace", got: argsOf},
		"keyDerivationCPU":     {path: "budgets.keyDerivationCPUPerNamespace", got: argsOf},
		"deniedAddressCIDRs":   {path: "deniedAddressCIDRs[]", got: argsOf},
		"allowedAddressCIDRs":  {path: "allowedAddressCIDRs[]", got: argsOf},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := append(valuesFileArgs(t, valuesYAML(t, tc.path, injected)), "--skip-schema-validation")
			docs := splitDocuments(t, []byte(render(t, args...)))
			for _, doc := range docs {
				if keys := injectedKeys(t, doc); len(keys) > 0 {
					t.Errorf("%s %s holds the keys %v", doc.Kind, doc.Metadata.Name, keys)
				}
			}
			d := decode[appsv1.Deployment](t, find(t, docs, "Deployment", releaseNamespace, prefix))
			if got := tc.got(t, d); !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, injected) }) {
				t.Errorf("%s = %q does not hold %q", tc.path, got, injected)
			}
		})
	}
}

// argsOf returns the manager's arguments.
func argsOf(t *testing.T, d appsv1.Deployment) []string {
	t.Helper()
	return managerContainer(t, d).Args
}

// injectedKeys returns the keys named hostNetwork or hostPID anywhere in
// doc.
func injectedKeys(t *testing.T, doc document) []string {
	t.Helper()
	var obj any
	if err := yaml.Unmarshal(doc.raw, &obj); err != nil {
		t.Fatalf("parsing %s %s: %v", doc.Kind, doc.Metadata.Name, err)
	}
	var found []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if k == "hostNetwork" || k == "hostPID" {
					found = append(found, k)
				}
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(obj)
	return found
}
