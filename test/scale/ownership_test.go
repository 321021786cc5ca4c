package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestCheckOwnership(t *testing.T) {
	nn := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	a := liveBackend{NamespacedName: nn("ns", "a"), UID: "uid-a"}
	b := liveBackend{NamespacedName: nn("ns", "b"), UID: "uid-b"}
	cm := func(name string, uid types.UID) renderedObject {
		return renderedObject{Kind: "ConfigMap", NamespacedName: nn("ns", name), ControllerUID: uid}
	}
	secret := func(name string, uid types.UID) renderedObject {
		return renderedObject{Kind: "Secret", NamespacedName: nn("ns", name), ControllerUID: uid}
	}
	cases := map[string]struct {
		backends []liveBackend
		objects  []renderedObject
		want     ownershipReport
		wantOK   bool
	}{
		"one of each per backend": {
			backends: []liveBackend{a, b},
			objects: []renderedObject{
				cm("a-backend", "uid-a"), secret("a-backend-credentials", "uid-a"),
				cm("b-backend", "uid-b"), secret("b-backend-credentials", "uid-b"),
			},
			want:   ownershipReport{Backends: 2, ConfigMaps: 2, Secrets: 2},
			wantOK: true,
		},
		"nothing at all": {want: ownershipReport{}, wantOK: true},
		"a missing Secret and a duplicated ConfigMap": {
			backends: []liveBackend{a, b},
			objects: []renderedObject{
				cm("a-backend", "uid-a"), cm("a-other", "uid-a"), secret("a-backend-credentials", "uid-a"),
				cm("b-backend", "uid-b"),
			},
			want: ownershipReport{
				Backends: 2, ConfigMaps: 3, Secrets: 1,
				Missing:    []string{"ns/b: no Secret"},
				Duplicated: []string{"ns/a: 2 ConfigMaps"},
			},
		},
		"orphans: a deleted owner, no owner, an owner in another namespace": {
			backends: []liveBackend{a},
			objects: []renderedObject{
				cm("a-backend", "uid-a"), secret("a-backend-credentials", "uid-a"),
				cm("gone-backend", "uid-gone"),
				secret("bare", ""),
				{Kind: "Secret", NamespacedName: nn("other", "a-backend-credentials"), ControllerUID: "uid-a"},
			},
			want: ownershipReport{
				Backends: 1, ConfigMaps: 2, Secrets: 3,
				Orphans: []string{"ConfigMap ns/gone-backend", "Secret ns/bare", "Secret other/a-backend-credentials"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := checkOwnership(tc.backends, tc.objects)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("checkOwnership mismatch (-want +got):\n%s", diff)
			}
			if got.ok() != tc.wantOK {
				t.Errorf("ok() = %v, want %v", got.ok(), tc.wantOK)
			}
		})
	}
}

func TestOwnershipReportString(t *testing.T) {
	cases := map[string]struct {
		report ownershipReport
		want   string
	}{
		"pass": {
			report: ownershipReport{Backends: 2, ConfigMaps: 2, Secrets: 2},
			want:   "ownership pass: 2 backends, 2 ConfigMaps, 2 Secrets, 0 missing, 0 duplicated, 0 orphans",
		},
		"fail names at most three of each": {
			report: ownershipReport{
				Backends: 5, ConfigMaps: 1, Secrets: 5,
				Missing: []string{"ns/a: no ConfigMap", "ns/b: no ConfigMap", "ns/c: no ConfigMap", "ns/d: no ConfigMap"},
				Orphans: []string{"Secret ns/x"},
			},
			want: "ownership FAIL: 5 backends, 1 ConfigMaps, 5 Secrets, 4 missing, 0 duplicated, 1 orphans" +
				" (ns/a: no ConfigMap; ns/b: no ConfigMap; ns/c: no ConfigMap) (Secret ns/x)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.report.String()); diff != "" {
				t.Errorf("String mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
