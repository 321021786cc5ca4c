package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// forEachObject calls fn for every item of a typed list.
func forEachObject(list client.ObjectList, fn func(client.Object)) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, item := range items {
		if o, ok := item.(client.Object); ok {
			fn(o)
		}
	}
	return nil
}

// countItems is the number of items of a typed list.
func countItems(list client.ObjectList) (int, error) {
	n := 0
	err := forEachObject(list, func(client.Object) { n++ })
	return n, err
}
