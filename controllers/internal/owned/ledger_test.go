package owned

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/internal/contenthash"
)

// ledgerStep is one thing that happens to a Ledger.
type ledgerStep struct {
	// op is reserve, done, cancel (of the reservation named res), seen or
	// gone (a watch event), or fit (of items).
	op string
	// ns and name are the Secret the step is about; ns defaults to "a".
	ns, name string
	size     int64
	uid      types.UID
	// res names a reservation: reserve records it, done and cancel end it.
	res string
	// meta edits the metadata of a watch event (seen).
	meta func(*metav1.PartialObjectMetadata)
	// items are the Secrets of a fit, in namespace ns, in order.
	items []fitItem
	// wantErr is part of the refusal; empty for none.
	wantErr string
}

// fitItem is one Secret of a fit.
type fitItem struct {
	name string
	size int64
}

// ledgerTestShares is an API storage budget of 100 bytes per namespace
// and 150 in all.
func ledgerTestShares() *budget.Shares {
	return budget.New(budget.Config{Name: "API storage", Unit: budget.Bytes, PerNamespace: 100, PerNamespaceFlag: "share-flag",
		Total: 150, TotalFlag: "total-flag"}, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
}

// writtenMeta is the metadata of a Secret the operator wrote, as a watch
// delivers it: controlled by an object of this API, with its size.
func writtenMeta(ns, name string, uid types.UID, size int64) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, UID: uid,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: backendsv1alpha1.GroupVersion.String(), Kind: "RemoteState", Name: "net", Controller: new(true)}},
		Annotations:     map[string]string{contenthash.StoredBytesAnnotation: fmt.Sprint(size)},
	}}
}

// TestLedger drives a Ledger with writes and watch events and checks what
// each namespace uses of the budget, and which writes it refuses.
func TestLedger(t *testing.T) {
	cases := map[string]struct {
		steps    []ledgerStep
		wantUsed map[string]int64
	}{
		"a create takes its size, a rewrite replaces it": {
			steps: []ledgerStep{
				{op: "reserve", name: "s", size: 60, res: "1"}, {op: "done", res: "1", uid: "u1"},
				{op: "reserve", name: "s", size: 90, res: "2"}, {op: "done", res: "2", uid: "u1"},
				{op: "reserve", name: "s", size: 40, res: "3"}, {op: "done", res: "3", uid: "u1"},
			},
			wantUsed: map[string]int64{"a": 40},
		},
		"a write beyond the share is refused and holds nothing": {
			steps: []ledgerStep{
				{op: "reserve", name: "s", size: 60, res: "1"}, {op: "done", res: "1", uid: "u1"},
				{op: "reserve", name: "t", size: 50, wantErr: "namespace a has used its API storage share: 60 bytes of 100 bytes (--share-flag), 50 bytes more were asked for"},
				{op: "reserve", name: "s", size: 110, wantErr: "50 bytes more were asked for"},
			},
			wantUsed: map[string]int64{"a": 60},
		},
		"a shrinking or equal write always passes, even beyond the share": {
			steps: []ledgerStep{
				{op: "seen", name: "s", uid: "u1", size: 130}, // learned from a watch: the bytes are there
				{op: "reserve", name: "s", size: 130, res: "1"}, {op: "done", res: "1", uid: "u1"},
				{op: "reserve", name: "s", size: 120, res: "2"}, {op: "done", res: "2", uid: "u1"},
				{op: "reserve", name: "t", size: 1, wantErr: "120 bytes of 100 bytes"},
			},
			wantUsed: map[string]int64{"a": 120},
		},
		"while a write is in flight, the larger of the old and the new size is held": {
			steps: []ledgerStep{
				{op: "reserve", name: "s", size: 40, res: "1"}, {op: "done", res: "1", uid: "u1"},
				{op: "reserve", name: "s", size: 80, res: "2"},
				{op: "reserve", name: "t", size: 30, wantErr: "80 bytes of 100 bytes"},
				{op: "cancel", res: "2"},
				{op: "reserve", name: "t", size: 30, res: "3"}, {op: "done", res: "3", uid: "u2"},
			},
			wantUsed: map[string]int64{"a": 70},
		},
		"a shrink in flight holds the old size until it is done": {
			steps: []ledgerStep{
				{op: "seen", name: "s", uid: "u1", size: 90},
				{op: "reserve", name: "s", size: 10, res: "1"},
				{op: "reserve", name: "t", size: 20, wantErr: "90 bytes of 100 bytes"},
				{op: "done", res: "1", uid: "u1"},
				{op: "reserve", name: "t", size: 20, res: "2"}, {op: "done", res: "2", uid: "u2"},
			},
			wantUsed: map[string]int64{"a": 30},
		},
		"two writes in flight in one namespace cannot both pass on the same bytes": {
			steps: []ledgerStep{
				{op: "reserve", name: "s", size: 60, res: "1"},
				{op: "reserve", name: "t", size: 60, wantErr: "60 bytes of 100 bytes"},
				{op: "done", res: "1", uid: "u1"},
			},
			wantUsed: map[string]int64{"a": 60},
		},
		"a deletion gives the bytes back": {
			steps: []ledgerStep{
				{op: "reserve", name: "s", size: 60, res: "1"}, {op: "done", res: "1", uid: "u1"},
				{op: "seen", name: "s", uid: "u1", size: 60},
				{op: "gone", name: "s", uid: "u1"},
				{op: "reserve", name: "t", size: 100, res: "2"}, {op: "done", res: "2", uid: "u2"},
			},
			wantUsed: map[string]int64{"a": 100},
		},
		"the late deletion of an object written again since changes nothing": {
			steps: []ledgerStep{
				{op: "seen", name: "s", uid: "u1", size: 60},
				{op: "reserve", name: "s", size: 70, res: "1"}, {op: "done", res: "1", uid: "u2"},
				{op: "gone", name: "s", uid: "u1"},
				{op: "seen", name: "s", uid: "u2", size: 70},
			},
			wantUsed: map[string]int64{"a": 70},
		},
		"a deletion while a patch is in flight leaves nothing once the patch returns": {
			steps: []ledgerStep{
				{op: "seen", name: "s", uid: "u1", size: 60},
				{op: "reserve", name: "s", size: 80, res: "1"},
				{op: "gone", name: "s", uid: "u1"},
				{op: "done", res: "1", uid: "u1"},
			},
			wantUsed: map[string]int64{},
		},
		"a deletion while a create is in flight keeps the new object": {
			steps: []ledgerStep{
				{op: "seen", name: "s", uid: "u1", size: 60},
				{op: "reserve", name: "s", size: 80, res: "1"},
				{op: "gone", name: "s", uid: "u1"},
				{op: "done", res: "1", uid: "u2"},
			},
			wantUsed: map[string]int64{"a": 80},
		},
		"after a restart the watch's first list counts what the operator wrote, and nothing else": {
			steps: []ledgerStep{
				{op: "seen", name: "written", uid: "u1", size: 70},
				{op: "seen", name: "theirs", uid: "u2", size: 50, meta: func(m *metav1.PartialObjectMetadata) {
					m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: new(true)}}
				}},
				{op: "seen", name: "before-the-annotation", uid: "u3", meta: func(m *metav1.PartialObjectMetadata) { m.Annotations = nil }},
				{op: "seen", name: "mangled", uid: "u4", meta: func(m *metav1.PartialObjectMetadata) {
					m.Annotations[contenthash.StoredBytesAnnotation] = "-5"
				}},
				{op: "reserve", name: "new", size: 31, wantErr: "70 bytes of 100 bytes"},
			},
			wantUsed: map[string]int64{"a": 70},
		},
		"an object rewritten without the annotation stops counting": {
			steps: []ledgerStep{
				{op: "seen", name: "s", uid: "u1", size: 70},
				{op: "seen", name: "s", uid: "u1", meta: func(m *metav1.PartialObjectMetadata) { m.Annotations = nil }},
			},
			wantUsed: map[string]int64{},
		},
		"an object written before the annotation counts once written again": {
			steps: []ledgerStep{
				{op: "seen", name: "s", uid: "u1", meta: func(m *metav1.PartialObjectMetadata) { m.Annotations = nil }},
				{op: "reserve", name: "s", size: 70, res: "1"}, {op: "done", res: "1", uid: "u1"},
			},
			wantUsed: map[string]int64{"a": 70},
		},
		"the total bounds every namespace together": {
			steps: []ledgerStep{
				{op: "reserve", name: "s", size: 100, res: "1"}, {op: "done", res: "1", uid: "u1"},
				{op: "reserve", ns: "b", name: "s", size: 60, wantErr: "all namespaces together use 100 bytes of the 150 bytes total (--total-flag), 60 bytes more were asked for by namespace b"},
				{op: "reserve", ns: "b", name: "s", size: 50, res: "2"}, {op: "done", res: "2", uid: "u2"},
			},
			wantUsed: map[string]int64{"a": 100, "b": 50},
		},
		"a fit checks several objects together and reserves nothing": {
			steps: []ledgerStep{
				{op: "fit", items: []fitItem{{"s", 60}, {"t", 50}}, wantErr: "0 bytes of 100 bytes (--share-flag), 110 bytes more"},
				{op: "fit", items: []fitItem{{"s", 60}, {"t", 40}}},
			},
			wantUsed: map[string]int64{},
		},
		"a fit counts the growth of a rewrite only, and what a write gives back for the writes after it": {
			steps: []ledgerStep{
				{op: "seen", name: "s", uid: "u1", size: 90},
				{op: "fit", items: []fitItem{{"s", 95}, {"t", 5}}},
				{op: "fit", items: []fitItem{{"s", 95}, {"t", 6}}, wantErr: "11 bytes more"},
				{op: "fit", items: []fitItem{{"s", 10}, {"t", 90}}},
				{op: "fit", items: []fitItem{{"t", 90}, {"s", 10}}, wantErr: "90 bytes more"},
			},
			wantUsed: map[string]int64{"a": 90},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			shares := ledgerTestShares()
			l := NewLedger(shares)
			held := map[string]*Reservation{}
			for i, st := range tc.steps {
				ns := st.ns
				if ns == "" {
					ns = "a"
				}
				writer := WriterKey{Kind: "RemoteState", NamespacedName: types.NamespacedName{Namespace: ns, Name: "net"}}
				key := StoredKey{Kind: "Secret", NamespacedName: types.NamespacedName{Namespace: ns, Name: st.name}}
				var err error
				switch st.op {
				case "reserve":
					var r *Reservation
					r, err = l.Reserve(writer, key, st.size)
					held[st.res] = r
				case "done":
					held[st.res].Done(st.uid)
				case "cancel":
					held[st.res].Cancel()
				case "seen", "gone":
					meta := writtenMeta(ns, st.name, st.uid, st.size)
					if st.meta != nil {
						st.meta(meta)
					}
					l.Observe("Secret", meta, st.op == "gone")
				case "fit":
					var items []Item
					for _, it := range st.items {
						items = append(items, Item{Key: StoredKey{Kind: "Secret", NamespacedName: types.NamespacedName{Namespace: ns, Name: it.name}}, Size: it.size})
					}
					err = l.Fit(writer, items...)
				default:
					t.Fatalf("step %d: unknown op %q", i, st.op)
				}
				switch {
				case st.wantErr == "" && err != nil:
					t.Fatalf("step %d (%s %s): %v", i, st.op, st.name, err)
				case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
					t.Fatalf("step %d (%s %s): error %v, want one containing %q", i, st.op, st.name, err, st.wantErr)
				}
			}
			if diff := cmp.Diff(tc.wantUsed, shares.Usage(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("use (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLedgerWakesRefusedWriters checks that a writer whose write was
// refused is woken once bytes are given back where it was refused: in
// its namespace for its share, anywhere for the total.
func TestLedgerWakesRefusedWriters(t *testing.T) {
	l := NewLedger(ledgerTestShares())
	var woken []string
	l.OnRelease("HttpBackend", func(key types.NamespacedName) { woken = append(woken, key.String()) })
	backend := func(ns, name string) WriterKey {
		return WriterKey{Kind: "HttpBackend", NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	secret := func(ns, name string) StoredKey {
		return StoredKey{Kind: "Secret", NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	take := func(ns, name string, size int64) error {
		r, err := l.Reserve(backend(ns, name), secret(ns, name), size)
		r.Done(types.UID(ns + "/" + name))
		return err
	}
	expectWoken := func(step string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, woken, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("%s: woken (-want +got):\n%s", step, diff)
		}
		woken = nil
	}

	for _, err := range []error{take("a", "one", 90), take("b", "two", 50)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if take("a", "refused-by-share", 20) == nil || take("b", "refused-by-total", 20) == nil {
		t.Fatal("writes beyond the share and the total passed")
	}
	expectWoken("refusals")

	l.Observe("Secret", writtenMeta("c", "other", "u", 0), false)
	expectWoken("nothing given back")

	r, _ := l.Reserve(backend("b", "two"), secret("b", "two"), 40)
	r.Done("b/two")
	expectWoken("bytes given back in b", "b/refused-by-total")

	l.Observe("Secret", writtenMeta("a", "one", "a/one", 0), true)
	expectWoken("bytes given back in a", "a/refused-by-share")

	l.Observe("Secret", writtenMeta("b", "two", "b/two", 0), true)
	expectWoken("a writer is woken once")
}

// TestLedgerConcurrentReservations races many writes of one namespace:
// exactly as many as the share holds pass.
func TestLedgerConcurrentReservations(t *testing.T) {
	shares := ledgerTestShares()
	l := NewLedger(shares)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		passed int
	)
	for i := range 40 {
		wg.Go(func() {
			key := StoredKey{Kind: "ConfigMap", NamespacedName: types.NamespacedName{Namespace: "a", Name: fmt.Sprint("cm-", i)}}
			r, err := l.Reserve(WriterKey{Kind: "RemoteState", NamespacedName: key.NamespacedName}, key, 10)
			if err != nil {
				return
			}
			r.Done(types.UID(key.Name))
			mu.Lock()
			passed++
			mu.Unlock()
		})
	}
	wg.Wait()
	if passed != 10 || shares.Used("a") != 100 {
		t.Errorf("%d writes passed using %d bytes, want 10 using 100", passed, shares.Used("a"))
	}
}
