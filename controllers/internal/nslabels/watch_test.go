package nslabels

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"
)

// namespace is the metadata of a namespace with labels.
func namespace(name string, labels map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"note": "not kept"}},
	}
}

// testScheme is a scheme for the fake metadata client.
func testScheme() *runtime.Scheme {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		panic(err)
	}
	return scheme
}

// events records what the handlers get.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) handle(ns *metav1.PartialObjectMetadata, deleted bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	what := ns.Name
	if deleted {
		what = "-" + what
	}
	e.got = append(e.got, what)
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

// eventually fails t unless check passes within ten seconds.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatchHoldsLabelsAndReportsTheirChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := metadatafake.NewSimpleMetadataClient(testScheme(), namespace("team-b", map[string]string{"outputs": "network"}))
	w := New(client, func(context.Context) (bool, error) { return true, nil }, time.Hour)
	if _, err := w.Labels("team-b"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("Labels before the first list = %v, want ErrUnknown", err)
	}
	var seen events
	w.AddHandler(seen.handle)
	go func() { _ = w.Start(ctx) }()
	if err := w.WaitForSettled(ctx); err != nil {
		t.Fatal(err)
	}

	labels, err := w.Labels("team-b")
	if err != nil || !cmp.Equal(labels, map[string]string{"outputs": "network"}) {
		t.Errorf("Labels(team-b) = %v, %v; want outputs=network", labels, err)
	}
	if labels, err := w.Labels("gone"); err != nil || labels != nil {
		t.Errorf("Labels of a namespace that does not exist = %v, %v; want none", labels, err)
	}
	eventually(t, "every namespace handed over once the labels are known", func() bool { return cmp.Equal(seen.list(), []string{"team-b"}) })

	resource := client.Resource(namespaces).(metadatafake.MetadataClient)
	if _, err := resource.UpdateFake(namespace("team-b", map[string]string{"outputs": "network"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := resource.CreateFake(namespace("team-c", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := resource.UpdateFake(namespace("team-b", map[string]string{"outputs": "none"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := resource.Delete(ctx, "team-c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A change of something else than the labels is no event.
	eventually(t, "a new namespace, a relabelling and a deletion", func() bool {
		return cmp.Equal(seen.list(), []string{"team-b", "team-c", "team-b", "-team-c"})
	})
	eventually(t, "the new labels", func() bool {
		labels, _ := w.Labels("team-b")
		return labels["outputs"] == "none"
	})
}

func TestWatchAsksNothingWhileNotAllowed(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := metadatafake.NewSimpleMetadataClient(testScheme(), namespace("team-b", map[string]string{"outputs": "network"}))
	var (
		mu      sync.Mutex
		allowed bool
		asked   int
	)
	w := New(client, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		return allowed, nil
	}, 10*time.Millisecond)
	var seen events
	w.AddHandler(seen.handle)
	go func() { _ = w.Start(ctx) }()
	if err := w.WaitForSettled(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := w.Labels("team-b")
	if !errors.Is(err, ErrUnknown) || !errors.Is(err, ErrNotAllowed) || err.Error() != "the labels of namespaces are unknown: the manager may not list and watch namespaces" {
		t.Errorf("Labels while not allowed = %v, want ErrUnknown saying the manager may not watch namespaces", err)
	}
	eventually(t, "asking again", func() bool { mu.Lock(); defer mu.Unlock(); return asked >= 2 })
	if actions := client.Actions(); len(actions) != 0 {
		t.Errorf("the watch sent %d requests while it may not: %v", len(actions), actions)
	}

	mu.Lock()
	allowed = true
	mu.Unlock()
	eventually(t, "the labels once allowed", func() bool {
		labels, err := w.Labels("team-b")
		return err == nil && labels["outputs"] == "network"
	})
	eventually(t, "every namespace handed over once the labels are known", func() bool { return cmp.Equal(seen.list(), []string{"team-b"}) })
}

func TestTrimKeepsNameAndLabels(t *testing.T) {
	got, err := trim(namespace("team-b", map[string]string{"a": "b"}))
	if err != nil {
		t.Fatal(err)
	}
	if ns := got.(*metav1.PartialObjectMetadata); ns.Annotations != nil || ns.Name != "team-b" || ns.Labels["a"] != "b" {
		t.Errorf("trim kept %+v", ns.ObjectMeta)
	}
	var other runtime.Object = &metav1.Status{}
	if same, _ := trim(other); same != other {
		t.Error("trim changed an object that is no namespace")
	}
}
