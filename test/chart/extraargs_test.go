package chart

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// ownedFlags are the manager flags the chart sets itself, each with the
// start of what its refusal in extraArgs says after naming it: the value
// to use instead, or why none does.
var ownedFlags = map[string]string{
	"--watch-namespaces":                    "use the value watchNamespaces instead",
	"--watch-label-selector":                "use the value shards instead",
	"--leader-elect":                        "use the value leaderElection instead",
	"--leader-election-id":                  "use the value leaderElectionID instead",
	"--leader-election-namespace":           "the Lease is in the release namespace",
	"--health-probe-bind-address":           "the Pod's liveness and readiness probes read port 8081",
	"--metrics-bind-address":                "use the value metrics.service.port instead",
	"--secret-reference-policy":             "use the value secretReferencePolicy instead",
	"--denied-address-cidrs":                "use the value deniedAddressCIDRs instead",
	"--allowed-address-cidrs":               "use the value allowedAddressCIDRs instead",
	"--max-concurrent-probes":               "use the value maxConcurrentProbes instead",
	"--max-concurrent-probes-per-namespace": "use the value maxConcurrentProbesPerNamespace instead",
	"--max-concurrent-decryptions":          "use the value maxConcurrentDecryptions instead",
	"--default-probe-interval":              "use the value defaultProbeInterval instead",
	"--read-memory-per-namespace":           "use the value budgets.readMemoryPerNamespace instead",
	"--read-memory-total":                   "use the value budgets.readMemoryTotal instead",
	"--api-storage-per-namespace":           "use the value budgets.apiStoragePerNamespace instead",
	"--api-storage-total":                   "use the value budgets.apiStorageTotal instead",
	"--key-derivation-cpu-per-namespace":    "use the value budgets.keyDerivationCPUPerNamespace instead",
	"--key-derivation-cpu-total":            "use the value budgets.keyDerivationCPUTotal instead",
}

// ownedList is how a refusal lists the flags the chart owns.
func ownedList() string {
	return "The chart owns " + strings.Join(slices.Sorted(maps.Keys(ownedFlags)), ", ") + ";"
}

// TestExtraArgsRefused checks that an extraArgs argument setting a flag
// the chart sets itself fails the render, and that helm's message names
// the argument, the flag and what to use instead, and lists every flag
// the chart owns.
func TestExtraArgsRefused(t *testing.T) {
	type refusal struct{ index, flag string }
	cases := map[string]struct {
		extraArgs []string
		want      []refusal
	}{
		"a bare flag": {
			extraArgs: []string{"--leader-elect"},
			want:      []refusal{{"0", "--leader-elect"}},
		},
		"after a flag the chart does not own": {
			extraArgs: []string{"--zap-log-level=debug", "--max-concurrent-probes-per-namespace=2"},
			want:      []refusal{{"1", "--max-concurrent-probes-per-namespace"}},
		},
		"two owned flags, both named": {
			extraArgs: []string{"--metrics-bind-address=:9443", "--lock-release-wait=1m", "--watch-namespaces=a"},
			want:      []refusal{{"0", "--metrics-bind-address"}, {"2", "--watch-namespaces"}},
		},
	}
	for flag := range ownedFlags {
		cases["each owned flag: "+flag] = struct {
			extraArgs []string
			want      []refusal
		}{extraArgs: []string{flag + "=x"}, want: []refusal{{"0", flag}}}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := templateArgs("extraArgs={" + strings.Join(tc.extraArgs, ",") + "}")
			_, stderr, err := testtools.RunHelm(t.Context(), t, args...)
			if err == nil {
				t.Fatalf("helm template with extraArgs %v succeeded, want it refused", tc.extraArgs)
			}
			want := []string{ownedList()}
			for _, r := range tc.want {
				want = append(want, "extraArgs["+r.index+"] sets "+r.flag+", which the chart owns: "+ownedFlags[r.flag])
			}
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("helm template with extraArgs %v failed with\n%s\nwant a message containing %q", tc.extraArgs, stderr, w)
				}
			}
			if got := strings.Count(stderr, "which the chart owns"); got != len(tc.want) {
				t.Errorf("helm template with extraArgs %v named %d arguments, want %d:\n%s", tc.extraArgs, got, len(tc.want), stderr)
			}
		})
	}
}

// TestExtraArgsOwnedFlagsCoverTheChart checks that every flag the chart
// sets, with every value that adds one, on the main manager and on a
// shard's, is among the flags it refuses in extraArgs.
func TestExtraArgsOwnedFlagsCoverTheChart(t *testing.T) {
	managers := renderedManagers(t, "leaderElectionID=team-a-operator", "watchNamespaces={team-a}", "allowedAddressCIDRs={10.0.0.0/8}", "shards={a}")
	if len(managers) != 2 {
		t.Fatalf("rendered %d Deployments, want the main one and shard a's", len(managers))
	}
	var unowned []string
	for _, d := range managers {
		for _, arg := range managerContainer(t, d).Args {
			if flag, _, _ := strings.Cut(arg, "="); ownedFlags[flag] == "" && !slices.Contains(unowned, flag) {
				unowned = append(unowned, flag)
			}
		}
	}
	if len(unowned) > 0 {
		t.Errorf("the chart sets %v, which extraArgs does not refuse (ownedFlags and backend-operator.ownedFlags)", unowned)
	}
}

// TestExtraArgsAccepted checks that flags the chart does not set render,
// last and in order, including those that start like one it sets.
func TestExtraArgsAccepted(t *testing.T) {
	cases := map[string][]string{
		"other flags":                      {"--lock-release-wait=1m", "--max-concurrent-reconciles=8", "--zap-log-level=debug"},
		"flags that start like owned ones": {"--metrics-secure=true", "--max-concurrent-reconciles=2"},
	}
	for name, extraArgs := range cases {
		t.Run(name, func(t *testing.T) {
			args := managerContainer(t, renderedManager(t, "extraArgs={"+strings.Join(extraArgs, ",")+"}")).Args
			if diff := cmp.Diff(extraArgs, args[max(len(args)-len(extraArgs), 0):]); diff != "" {
				t.Errorf("last args (-want +got):\n%s", diff)
			}
		})
	}
}
