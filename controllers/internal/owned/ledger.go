package owned

import (
	"errors"
	"slices"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/infrastate/backend-operator/controllers/internal/budget"
	"github.com/infrastate/backend-operator/controllers/internal/related"
	"github.com/infrastate/backend-operator/internal/contenthash"
)

// Ledger counts the bytes the operator keeps in the API server, per
// object, and draws them from the API storage budget: each namespace's
// share of it is the sum of the objects the operator wrote there.
//
// An object counts its data as its contenthash.StoredBytesAnnotation
// says, which Writer sets on every object it writes. The ledger learns
// it from two sources: Writer's writes, which reserve their bytes before
// they are sent (see Reserve), and the related watches (see Observe),
// which list every object when the manager starts and report every change
// and deletion since, garbage collection included. A rewrite replaces the
// object's previous size; a deletion gives it back. After a restart, the
// first lists count every object before any write: the namespace's use is
// what it was.
//
// Objects the operator wrote before the annotation existed are not
// counted until they are written again (a new render, new outputs).
//
// It is safe for concurrent use: the check and the reservation of a write
// happen under one lock, so two writes of one namespace in flight at once
// cannot both pass on the same free bytes.
type Ledger struct {
	shares *budget.Shares

	mu      sync.Mutex
	objects map[StoredKey]*storedObject
	// refused are the writers a write of which was refused by their
	// namespace's share, by namespace; byTotal those refused by the total.
	refused map[string]map[WriterKey]struct{}
	byTotal map[WriterKey]struct{}
	// wakers are called, by writer kind, for each refused writer once
	// bytes are given back where it was refused (see OnRelease).
	wakers map[string][]func(types.NamespacedName)
}

// StoredKey names an object the operator writes: its kind (ConfigMap or
// Secret), namespace and name.
type StoredKey struct {
	Kind string
	types.NamespacedName
}

// storedObject is what the ledger knows of one object.
type storedObject struct {
	// uid and stored are the object's UID and size as the last write or
	// watch event reported them; stored is 0 for an object that is gone
	// or not counted.
	uid    types.UID
	stored int64
	// pending are the sizes of the writes in flight.
	pending []*Reservation
	// charged is what the budget holds for the object: the largest of
	// stored and the pending sizes, so that while a write is in flight
	// both the old and the new object are covered.
	charged int64
	// gone is the UID of the object's deletion reported while a write
	// was in flight: that write, if it was a patch of the deleted object,
	// left nothing behind.
	gone types.UID
}

// Reservation is the bytes one write holds while it is in flight. Done
// or Cancel ends it; the methods of a nil Reservation do nothing.
type Reservation struct {
	ledger *Ledger
	key    StoredKey
	size   int64
	ended  bool
}

// NewLedger returns the ledger of no object, drawing from shares.
func NewLedger(shares *budget.Shares) *Ledger {
	return &Ledger{
		shares:  shares,
		objects: map[StoredKey]*storedObject{},
		refused: map[string]map[WriterKey]struct{}{},
		byTotal: map[WriterKey]struct{}{},
		wakers:  map[string][]func(types.NamespacedName){},
	}
}

// Reserve holds size bytes for a write of key by writer, or returns the
// *budget.ExceededError of a write that would take the namespace beyond
// its share or every namespace beyond the total. Only growth is checked:
// a write no larger than what the object holds (or a write in flight
// already holds) always passes. A nil Ledger reserves nothing.
func (l *Ledger) Reserve(writer WriterKey, key StoredKey, size int64) (*Reservation, error) {
	if l == nil {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	obj := l.objects[key]
	if obj == nil {
		obj = &storedObject{}
	}
	if grow := max(obj.charge(), size) - obj.charged; grow > 0 {
		if err := l.shares.TryTake(key.Namespace, grow); err != nil {
			l.refuseLocked(writer, err)
			return nil, err
		}
		obj.charged += grow
	}
	r := &Reservation{ledger: l, key: key, size: size}
	obj.pending = append(obj.pending, r)
	l.objects[key] = obj
	return r, nil
}

// Item is one object of a Fit: its key and the size it would be written
// with.
type Item struct {
	Key  StoredKey
	Size int64
}

// Fit reports, as Reserve would for each of them in turn, whether writer
// may write items (objects of its namespace, in the order they are
// written, each once the one before is done) now, without reserving
// anything: the check before a write of several objects, so that a
// refusal leaves all of them as they were rather than some written and
// some not. What an item gives back (a shrink) counts for the items
// after it.
func (l *Ledger) Fit(writer WriterKey, items ...Item) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// need is the most the writes hold beyond what is held now, at the
	// peak of one of them; change what the writes done so far changed.
	var need, change int64
	for _, it := range items {
		var charge, charged int64
		if obj := l.objects[it.Key]; obj != nil {
			charge, charged = obj.charge(), obj.charged
		}
		need = max(need, change+max(charge, it.Size)-charged)
		change += it.Size - charged
	}
	if need <= 0 {
		return nil
	}
	if err := l.shares.Fits(writer.Namespace, need); err != nil {
		l.refuseLocked(writer, err)
		return err
	}
	return nil
}

// Done records that the write succeeded: the object, whose UID is uid,
// now holds the reserved size.
func (r *Reservation) Done(uid types.UID) { r.end(true, uid) }

// Cancel records that the write did not happen: what the object holds is
// unchanged.
func (r *Reservation) Cancel() { r.end(false, "") }

// end ends r: the object holds r.size under uid when wrote.
func (r *Reservation) end(wrote bool, uid types.UID) {
	if r == nil {
		return
	}
	l := r.ledger
	l.mu.Lock()
	if r.ended {
		l.mu.Unlock()
		return
	}
	r.ended = true
	obj := l.objects[r.key]
	obj.pending = slices.DeleteFunc(obj.pending, func(p *Reservation) bool { return p == r })
	if wrote {
		obj.uid, obj.stored = uid, r.size
		if uid != "" && uid == obj.gone { // deleted before the write returned
			obj.uid, obj.stored = "", 0
		}
	}
	woken := l.settleLocked(r.key, obj)
	l.mu.Unlock()
	l.wake(woken)
}

// Observe records an object as a related watch delivered it (see
// related.Observer): its size when an object of this API controls it and
// it carries contenthash.StoredBytesAnnotation, nothing otherwise; or its
// deletion. A deletion of another incarnation than the one recorded (an
// object deleted and written again meanwhile) changes nothing.
func (l *Ledger) Observe(kind string, meta *metav1.PartialObjectMetadata, deleted bool) {
	key := StoredKey{Kind: kind, NamespacedName: types.NamespacedName{Namespace: meta.Namespace, Name: meta.Name}}
	size, counted := storedBytes(meta)
	l.mu.Lock()
	obj := l.objects[key]
	switch {
	case obj == nil && (deleted || !counted):
		l.mu.Unlock()
		return
	case obj == nil:
		obj = &storedObject{}
		l.objects[key] = obj
	}
	switch {
	case !deleted:
		obj.uid, obj.stored = meta.UID, size
	case obj.uid != "" && meta.UID != "" && obj.uid != meta.UID:
		// An older incarnation's deletion, delivered late.
	default:
		if len(obj.pending) > 0 {
			obj.gone = meta.UID
		}
		obj.uid, obj.stored = "", 0
	}
	woken := l.settleLocked(key, obj)
	l.mu.Unlock()
	l.wake(woken)
}

// OnRelease registers wake for the writers of kind: each one a write of
// which was refused is woken, once, when bytes are given back in its
// namespace (or anywhere, when the total refused it).
func (l *Ledger) OnRelease(kind string, wake func(types.NamespacedName)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wakers[kind] = append(l.wakers[kind], wake)
}

// Forget drops writer from the refused writers: it is gone.
func (l *Ledger) Forget(writer WriterKey) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.refused[writer.Namespace], writer)
	if len(l.refused[writer.Namespace]) == 0 {
		delete(l.refused, writer.Namespace)
	}
	delete(l.byTotal, writer)
}

// charge is what the budget must hold for the object: the largest of what
// it holds and of the writes in flight.
func (o *storedObject) charge() int64 {
	c := o.stored
	for _, p := range o.pending {
		c = max(c, p.size)
	}
	return c
}

// settleLocked brings what the budget holds for obj to its charge, drops
// an object that holds nothing, and returns the writers to wake when
// bytes were given back.
func (l *Ledger) settleLocked(key StoredKey, obj *storedObject) []WriterKey {
	want := obj.charge()
	delta := want - obj.charged
	obj.charged = want
	if len(obj.pending) == 0 {
		obj.gone = ""
		if obj.stored == 0 {
			delete(l.objects, key)
		}
	}
	switch {
	case delta > 0:
		// Learned from a watch: the bytes are there, within the share or
		// not.
		l.shares.Charge(key.Namespace, delta)
	case delta < 0:
		l.shares.Give(key.Namespace, -delta)
		return l.takeWaitersLocked(key.Namespace)
	}
	return nil
}

// refuseLocked records that err refused a write of writer.
func (l *Ledger) refuseLocked(writer WriterKey, err error) {
	var exceeded *budget.ExceededError
	switch {
	case !errors.As(err, &exceeded):
	case exceeded.Total:
		l.byTotal[writer] = struct{}{}
	default:
		if l.refused[writer.Namespace] == nil {
			l.refused[writer.Namespace] = map[WriterKey]struct{}{}
		}
		l.refused[writer.Namespace][writer] = struct{}{}
	}
}

// takeWaitersLocked returns, and forgets, the writers refused in
// namespace and those refused by the total.
func (l *Ledger) takeWaitersLocked(namespace string) []WriterKey {
	var woken []WriterKey
	for w := range l.refused[namespace] {
		woken = append(woken, w)
	}
	delete(l.refused, namespace)
	for w := range l.byTotal {
		woken = append(woken, w)
	}
	clear(l.byTotal)
	return woken
}

// wake calls the wakers of each writer's kind, without the lock held.
func (l *Ledger) wake(writers []WriterKey) {
	if len(writers) == 0 {
		return
	}
	l.mu.Lock()
	wakers := make(map[string][]func(types.NamespacedName), len(l.wakers))
	for kind, fns := range l.wakers {
		wakers[kind] = slices.Clone(fns)
	}
	l.mu.Unlock()
	for _, w := range writers {
		for _, wake := range wakers[w.Kind] {
			wake(w.NamespacedName)
		}
	}
}

// storedBytes is the size meta's contenthash.StoredBytesAnnotation
// records, and whether the object counts: an object of this API controls
// it and the annotation is a size.
func storedBytes(meta metav1.Object) (int64, bool) {
	if related.ControllerOfThisAPI(meta) == nil {
		return 0, false
	}
	value, ok := meta.GetAnnotations()[contenthash.StoredBytesAnnotation]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
