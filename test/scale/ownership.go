package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// liveBackend is a backend that exists, as the ownership check needs it.
type liveBackend struct {
	types.NamespacedName
	UID types.UID
}

// renderedObject is a ConfigMap or Secret carrying the operator's
// labels, as the ownership check needs it.
type renderedObject struct {
	// Kind is ConfigMap or Secret.
	Kind string
	types.NamespacedName
	// ControllerUID is the UID of its controller owner reference; empty
	// when it has none.
	ControllerUID types.UID
}

// ownershipReport is the outcome of checkOwnership.
type ownershipReport struct {
	// Backends, ConfigMaps and Secrets are the numbers of objects checked.
	Backends, ConfigMaps, Secrets int
	// Missing names backends without their ConfigMap or Secret
	// ("ns/name: no ConfigMap"), Duplicated those with more than one, and
	// Orphans the rendered objects whose controller is no live backend of
	// their namespace ("ConfigMap ns/name"). Each is sorted.
	Missing, Duplicated, Orphans []string
}

// checkOwnership checks what a crash must not leave behind: every live
// backend controls exactly one ConfigMap and one Secret, and every
// ConfigMap and Secret with the operator's labels is controlled by a live
// backend of its own namespace.
func checkOwnership(backends []liveBackend, objects []renderedObject) ownershipReport {
	r := ownershipReport{Backends: len(backends)}
	byUID := make(map[types.UID]liveBackend, len(backends))
	for _, b := range backends {
		byUID[b.UID] = b
	}
	owned := map[types.UID]map[string]int{}
	for _, o := range objects {
		switch o.Kind {
		case "ConfigMap":
			r.ConfigMaps++
		case "Secret":
			r.Secrets++
		}
		b, ok := byUID[o.ControllerUID]
		if o.ControllerUID == "" || !ok || b.Namespace != o.Namespace {
			r.Orphans = append(r.Orphans, o.Kind+" "+o.String())
			continue
		}
		if owned[b.UID] == nil {
			owned[b.UID] = map[string]int{}
		}
		owned[b.UID][o.Kind]++
	}
	for _, b := range backends {
		for _, kind := range []string{"ConfigMap", "Secret"} {
			switch n := owned[b.UID][kind]; {
			case n == 0:
				r.Missing = append(r.Missing, fmt.Sprintf("%s: no %s", b, kind))
			case n > 1:
				r.Duplicated = append(r.Duplicated, fmt.Sprintf("%s: %d %ss", b, n, kind))
			}
		}
	}
	slices.Sort(r.Missing)
	slices.Sort(r.Duplicated)
	slices.Sort(r.Orphans)
	return r
}

// ok reports whether the check passed.
func (r ownershipReport) ok() bool {
	return len(r.Missing) == 0 && len(r.Duplicated) == 0 && len(r.Orphans) == 0
}

// String summarises the report in one line, naming at most three
// offenders of each sort.
func (r ownershipReport) String() string {
	verdict := "pass"
	if !r.ok() {
		verdict = "FAIL"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ownership %s: %d backends, %d ConfigMaps, %d Secrets, %d missing, %d duplicated, %d orphans",
		verdict, r.Backends, r.ConfigMaps, r.Secrets, len(r.Missing), len(r.Duplicated), len(r.Orphans))
	for _, list := range [][]string{r.Missing, r.Duplicated, r.Orphans} {
		if len(list) > 0 {
			b.WriteString(" (" + strings.Join(list[:min(3, len(list))], "; ") + ")")
		}
	}
	return b.String()
}
