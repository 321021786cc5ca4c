package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestPlanBatch(t *testing.T) {
	nn := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	cases := map[string]struct {
		n, perNamespace int
		want            batch
	}{
		"uneven split": {
			n: 5, perNamespace: 2,
			want: batch{
				namespaces: []string{"p-0000", "p-0001", "p-0002"},
				backends: []types.NamespacedName{
					nn("p-0000", "hb-00000"), nn("p-0000", "hb-00001"),
					nn("p-0001", "hb-00002"), nn("p-0001", "hb-00003"),
					nn("p-0002", "hb-00004"),
				},
			},
		},
		"one namespace": {
			n: 2, perNamespace: 100,
			want: batch{
				namespaces: []string{"p-0000"},
				backends:   []types.NamespacedName{nn("p-0000", "hb-00000"), nn("p-0000", "hb-00001")},
			},
		},
		"nothing": {n: 0, perNamespace: 10, want: batch{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := planBatch("p", tc.n, tc.perNamespace)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(batch{})); diff != "" {
				t.Errorf("planBatch mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
