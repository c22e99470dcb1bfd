package etcd3_test

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/storage"

	"github.com/listwatch-labs/listwatch-labs/labs/04-cacher/internal/labtest"
)

func TestWatchStoppedAtOnceLeavesNothing(t *testing.T) {
	checkLeaks(t)
	s := newStore(t)
	for range 5 {
		w, err := s.Watch(context.Background(), "/configmaps/stop", storage.ListOptions{ResourceVersion: "1", Recursive: true, ProgressNotify: true, Predicate: labtest.Predicate(nil, nil)})
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
	}
}
