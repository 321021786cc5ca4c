package main

import (
	"flag"
	"io"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"

	"github.com/infrastate/backend-operator/controllers"
	"github.com/infrastate/backend-operator/internal/netguard"
)

func TestParseOptions(t *testing.T) {
	// defaults returns the options of no flags, changed by edit.
	defaults := func(edit func(*options)) options {
		o := options{
			metricsAddr: "0", secureMetrics: true, probeAddr: ":8081", pprofAddr: "0", maxConcurrentReconciles: 4,
			maxConcurrentProbes: 16, maxConcurrentProbesPerNamespace: 4, defaultProbeInterval: 5 * time.Minute,
			maxConcurrentDecryptions: 4, lockReleaseWait: 2 * time.Minute, leaderElectionID: defaultLeaderElectionID, referencePolicy: controllers.ReferencePolicyNamespace,
			addressPolicy: netguard.Policy{Denied: netguard.DefaultDenied()}, budgets: controllers.DefaultBudgets(),
		}
		if edit != nil {
			edit(&o)
		}
		return o
	}
	cases := map[string]struct {
		args    []string
		env     map[string]string
		want    options
		wantErr string
	}{
		"defaults": {
			want: defaults(nil),
		},
		"region from the environment": {
			env:  map[string]string{"TENCENTCLOUD_REGION": "ap-shanghai"},
			want: defaults(func(o *options) { o.cosDefaultRegion = "ap-shanghai" }),
		},
		"flag wins over the environment": {
			args: []string{"--cos-default-region=ap-guangzhou"},
			env:  map[string]string{"TENCENTCLOUD_REGION": "ap-shanghai"},
			want: defaults(func(o *options) { o.cosDefaultRegion = "ap-guangzhou" }),
		},
		"every flag": {
			args: []string{
				"--metrics-bind-address=:8443", "--metrics-secure=false", "--health-probe-bind-address=:9000",
				"--leader-elect", "--watch-namespaces= team-a,team-b,,team-a ", "--max-concurrent-reconciles=8",
				"--max-concurrent-probes=32", "--max-concurrent-probes-per-namespace=2", "--secret-reference-policy=labeled",
				"--allowed-address-cidrs=10.0.0.0/8, 192.168.1.7", "--denied-address-cidrs=10.96.0.0/12",
				"--default-probe-interval=90s", "--pprof-bind-address=127.0.0.1:6060", "--lock-release-wait=30s",
				"--max-concurrent-decryptions=3", "--leader-election-id=team-a-operator", "--leader-election-namespace=operators",
				"--read-memory-per-namespace=12Mi", "--read-memory-total=64Mi", "--api-storage-per-namespace=8Mi",
				"--api-storage-total=100Mi", "--key-derivation-cpu-per-namespace=2s", "--key-derivation-cpu-total=10s",
			},
			want: options{
				metricsAddr: ":8443", probeAddr: ":9000", pprofAddr: "127.0.0.1:6060", leaderElect: true,
				watchNamespaces: []string{"team-a", "team-b"}, maxConcurrentReconciles: 8,
				maxConcurrentProbes: 32, maxConcurrentProbesPerNamespace: 2, defaultProbeInterval: 90 * time.Second,
				maxConcurrentDecryptions: 3, lockReleaseWait: 30 * time.Second, leaderElectionID: "team-a-operator", leaderElectionNamespace: "operators",
				referencePolicy: controllers.ReferencePolicyLabeled,
				budgets: controllers.Budgets{
					ReadMemoryPerNamespace: 12 << 20, ReadMemoryTotal: 64 << 20, APIStoragePerNamespace: 8 << 20, APIStorageTotal: 100 << 20,
					KeyDerivationPerNamespace: 2 * time.Second, KeyDerivationTotal: 10 * time.Second,
				},
				addressPolicy: netguard.Policy{
					Allowed: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32")},
					Denied:  []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")},
				},
			},
		},
		"COS service URL": {
			args: []string{"--cos-service-url=http://127.0.0.1:9000/"},
			want: defaults(func(o *options) { o.cosServiceURL = &url.URL{Scheme: "http", Host: "127.0.0.1:9000"} }),
		},
		"COS service URL with a path": {
			args:    []string{"--cos-service-url=http://127.0.0.1:9000/cos"},
			wantErr: "--cos-service-url: invalid COS configuration: service URL",
		},
		"COS service URL without a scheme": {
			args:    []string{"--cos-service-url=127.0.0.1:9000"},
			wantErr: "--cos-service-url",
		},
		"an empty deny list allows link-local addresses": {
			args: []string{"--denied-address-cidrs="},
			want: defaults(func(o *options) { o.addressPolicy.Denied = nil }),
		},
		"unknown reference policy": {
			args:    []string{"--secret-reference-policy=cluster"},
			wantErr: `--secret-reference-policy must be namespace or labeled, got "cluster"`,
		},
		"bad CIDR": {
			args:    []string{"--denied-address-cidrs=10.0.0.0/33"},
			wantErr: "denied-address-cidrs",
		},
		"lock release wait below 1s": {
			args:    []string{"--lock-release-wait=500ms"},
			wantErr: "--lock-release-wait must be at least 1s, got 500ms",
		},
		"a leader election ID that is no Lease name": {
			args:    []string{"--leader-election-id=Team_A"},
			wantErr: `--leader-election-id "Team_A" is not a valid Lease name`,
		},
		"invalid leader election namespace": {
			args:    []string{"--leader-election-namespace=Operators"},
			wantErr: `--leader-election-namespace "Operators" is not a valid namespace`,
		},
		"zero decryption concurrency": {
			args:    []string{"--max-concurrent-decryptions=0"},
			wantErr: "--max-concurrent-decryptions must be at least 1, got 0",
		},
		"zero probe concurrency": {
			args:    []string{"--max-concurrent-probes-per-namespace=0"},
			wantErr: "--max-concurrent-probes and --max-concurrent-probes-per-namespace must be at least 1",
		},
		"a shard": {
			args: []string{"--watch-label-selector=sharding.fluxcd.io/key in (shard1)", "--leader-election-id=backend-operator-shard1"},
			want: defaults(func(o *options) {
				o.watchLabelSelector = mustParseSelector(t, controllers.ShardLabel+" in (shard1)")
				o.leaderElectionID = "backend-operator-shard1"
			}),
		},
		"the main shard": {
			args: []string{"--watch-label-selector=!sharding.fluxcd.io/key"},
			want: defaults(func(o *options) { o.watchLabelSelector = mustParseSelector(t, "!"+controllers.ShardLabel) }),
		},
		"a blank label selector holds every object": {
			args: []string{"--watch-label-selector= "},
			want: defaults(nil),
		},
		"invalid label selector": {
			args:    []string{"--watch-label-selector=sharding.fluxcd.io/key in shard1"},
			wantErr: "--watch-label-selector: ",
		},
		"invalid namespace": {
			args:    []string{"--watch-namespaces=team-a,Team_B"},
			wantErr: `--watch-namespaces: "Team_B" is not a valid namespace`,
		},
		"shortest default probe interval": {
			args: []string{"--default-probe-interval=10s"},
			want: defaults(func(o *options) { o.defaultProbeInterval = 10 * time.Second }),
		},
		"longest default probe interval": {
			args: []string{"--default-probe-interval=24h"},
			want: defaults(func(o *options) { o.defaultProbeInterval = 24 * time.Hour }),
		},
		"default probe interval too short": {
			args:    []string{"--default-probe-interval=9s"},
			wantErr: "--default-probe-interval must be between 10s and 24h, as spec.probe.interval, got 9s",
		},
		"default probe interval too long": {
			args:    []string{"--default-probe-interval=25h"},
			wantErr: "--default-probe-interval must be between 10s and 24h, as spec.probe.interval, got 25h0m0s",
		},
		// 0s disables probing, which only a spec may ask for.
		"no zero default probe interval": {
			args:    []string{"--default-probe-interval=0s"},
			wantErr: "--default-probe-interval must be between 10s and 24h",
		},
		"default probe interval is a duration": {
			args:    []string{"--default-probe-interval=5"},
			wantErr: "default-probe-interval",
		},
		"a read memory share below one read": {
			args:    []string{"--read-memory-per-namespace=1Mi"},
			wantErr: "--read-memory-per-namespace must be at least 6 MiB",
		},
		"a share above its total": {
			args:    []string{"--api-storage-per-namespace=2Gi"},
			wantErr: "--api-storage-total must be at least --api-storage-per-namespace",
		},
		"a byte budget is a quantity": {
			args:    []string{"--api-storage-total=lots"},
			wantErr: "not a quantity of bytes such as 64Mi",
		},
		"a byte budget is whole": {
			args:    []string{"--read-memory-total=-1Mi"},
			wantErr: "is not a whole, positive number of bytes",
		},
		"zero concurrency": {
			args:    []string{"--max-concurrent-reconciles=0"},
			wantErr: "--max-concurrent-reconciles must be at least 1, got 0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			got, err := parseOptions(fs, tc.args, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseOptions() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseOptions() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(options{}), cmpopts.EquateEmpty(), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
				cmp.Comparer(sameSelector)); diff != "" {
				t.Errorf("parseOptions() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// sameSelector compares label selectors by what they select, as written.
func sameSelector(a, b labels.Selector) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.String() == b.String()
}

// mustParseSelector parses a label selector of a test case.
func mustParseSelector(t *testing.T, value string) labels.Selector {
	t.Helper()
	selector, err := labels.Parse(value)
	if err != nil {
		t.Fatal(err)
	}
	return selector
}

func TestManagerOptions(t *testing.T) {
	cases := map[string]struct {
		in             options
		wantNamespaces map[string]cache.Config
		wantFilter     bool
		// wantShard is the label selector of every kind of the
		// operator's API group; empty when none.
		wantShard string
	}{
		"all namespaces, secure metrics": {
			in: options{
				metricsAddr: ":8443", secureMetrics: true, probeAddr: ":8081", pprofAddr: "127.0.0.1:6060",
				leaderElect: true, leaderElectionID: "team-a-operator", leaderElectionNamespace: "operators",
			},
			wantFilter: true,
		},
		"some namespaces, plain metrics": {
			in:             options{metricsAddr: ":8080", probeAddr: ":8081", watchNamespaces: []string{"a", "b"}},
			wantNamespaces: map[string]cache.Config{"a": {}, "b": {}},
		},
		"a shard": {
			in:        options{metricsAddr: "0", watchLabelSelector: mustParseSelector(t, "sharding.fluxcd.io/key in (shard1)")},
			wantShard: "sharding.fluxcd.io/key in (shard1)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := managerOptions(tc.in)
			if got.Metrics.BindAddress != tc.in.metricsAddr || got.Metrics.SecureServing != tc.in.secureMetrics {
				t.Errorf("metrics = %q secure=%v, want %q secure=%v", got.Metrics.BindAddress, got.Metrics.SecureServing, tc.in.metricsAddr, tc.in.secureMetrics)
			}
			if (got.Metrics.FilterProvider != nil) != tc.wantFilter {
				t.Errorf("metrics filter set = %v, want %v", got.Metrics.FilterProvider != nil, tc.wantFilter)
			}
			if got.PprofBindAddress != tc.in.pprofAddr {
				t.Errorf("pprof address = %q, want %q", got.PprofBindAddress, tc.in.pprofAddr)
			}
			if got.LeaderElection != tc.in.leaderElect || got.LeaderElectionID != tc.in.leaderElectionID || got.LeaderElectionNamespace != tc.in.leaderElectionNamespace {
				t.Errorf("leader election = %v %q in %q, want %v %q in %q", got.LeaderElection, got.LeaderElectionID, got.LeaderElectionNamespace,
					tc.in.leaderElect, tc.in.leaderElectionID, tc.in.leaderElectionNamespace)
			}
			if diff := cmp.Diff(tc.wantNamespaces, got.Cache.DefaultNamespaces); diff != "" {
				t.Errorf("cache namespaces mismatch (-want +got):\n%s", diff)
			}
			checkShard(t, got.Cache.ByObject, tc.wantShard)
			// Secrets and ConfigMaps must never be cached cluster-wide.
			var uncached []string
			for _, obj := range got.Client.Cache.DisableFor {
				switch obj.(type) {
				case *corev1.Secret:
					uncached = append(uncached, "Secret")
				case *corev1.ConfigMap:
					uncached = append(uncached, "ConfigMap")
				}
			}
			if diff := cmp.Diff([]string{"Secret", "ConfigMap"}, uncached); diff != "" {
				t.Errorf("uncached kinds mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// checkShard checks that byObject restricts exactly the seven kinds of
// the operator's API group to the selector want, or nothing when want is
// empty.
func checkShard(t *testing.T, byObject map[client.Object]cache.ByObject, want string) {
	t.Helper()
	if want == "" {
		if len(byObject) != 0 {
			t.Errorf("cache by object = %v, want none without a shard", byObject)
		}
		return
	}
	kinds := map[string]string{}
	for obj, by := range byObject {
		if gvk, _, err := scheme.ObjectKinds(obj); err == nil && gvk[0].Group == backendsv1alpha1.GroupVersion.Group && by.Label != nil {
			kinds[gvk[0].Kind] = by.Label.String()
		}
	}
	wantKinds := map[string]string{}
	for _, kind := range []string{"HttpBackend", "CosBackend", "RemoteState", "StateLock", "OutputGrant", "StateHistory", "StateRestore"} {
		wantKinds[kind] = want
	}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" || len(byObject) != len(wantKinds) {
		t.Errorf("the shard's kinds mismatch (-want +got), %d kinds restricted:\n%s", len(byObject), diff)
	}
}

// TestShippedArguments parses the manager's arguments in
// config/manager/manager.yaml: they must be valid, and the tenant-safety
// settings they spell out must be the defaults the code has, so that the
// manifest platform teams edit cannot drift from them.
func TestShippedArguments(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if arg, ok := strings.CutPrefix(strings.TrimSpace(line), "- --"); ok {
			args = append(args, "--"+arg)
		}
	}
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	got, err := parseOptions(fs, args, func(string) string { return "" })
	if err != nil {
		t.Fatalf("the shipped arguments %q do not parse: %v", args, err)
	}
	if diff := cmp.Diff(netguard.DefaultDenied(), got.addressPolicy.Denied, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("the shipped --denied-address-cidrs differ from the default (-default +shipped):\n%s", diff)
	}
	if got.referencePolicy != controllers.ReferencePolicyNamespace || got.maxConcurrentProbes != controllers.DefaultMaxConcurrentProbes ||
		got.maxConcurrentProbesPerNamespace != controllers.DefaultMaxConcurrentProbesPerNamespace ||
		got.defaultProbeInterval != controllers.DefaultProbeInterval {
		t.Errorf("the shipped arguments = %+v, want the defaults", got)
	}
	if got.cosServiceURL != nil {
		t.Errorf("the shipped arguments send COS requests to %s: --cos-service-url is for tests and demos", got.cosServiceURL)
	}
}

func TestShortDuration(t *testing.T) {
	cases := map[time.Duration]string{
		10 * time.Second:           "10s",
		5 * time.Minute:            "5m",
		90 * time.Minute:           "1h30m",
		24 * time.Hour:             "24h",
		time.Hour + 30*time.Second: "1h0m30s",
		1500 * time.Millisecond:    "1.5s",
	}
	for d, want := range cases {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
