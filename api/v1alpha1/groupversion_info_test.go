package v1alpha1

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestAddToSchemeRegistersEveryKind checks that AddToScheme registers each
// kind and its list under GroupVersion, by the names the *Kind constants
// spell, with the meta/v1 option types a client needs to list and watch
// them.
func TestAddToSchemeRegistersEveryKind(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatalf("AddToScheme: %v", err)
	}
	got := slices.Sorted(maps.Keys(s.KnownTypes(GroupVersion)))
	want := []string{
		CosBackendKind, CosBackendKind + "List",
		"CreateOptions", "DeleteOptions", "GetOptions", // meta/v1
		HttpBackendKind, HttpBackendKind + "List",
		"ListOptions", // meta/v1
		OutputGrantKind, OutputGrantKind + "List",
		"PatchOptions", // meta/v1
		RemoteStateKind, RemoteStateKind + "List",
		StateHistoryKind, StateHistoryKind + "List",
		StateLockKind, StateLockKind + "List",
		StateRestoreKind, StateRestoreKind + "List",
		"UpdateOptions", "WatchEvent", // meta/v1
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kinds registered under %s (-want +got):\n%s", GroupVersion, diff)
	}
}
