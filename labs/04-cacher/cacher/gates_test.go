package cacher

import (
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// The watch cache's GA gates are gone in 1.37: naming one is an error, as
// `--feature-gates` would report it. WatchCacheInitializationPostStartHook
// is GA and locked on: turning it off is an error too. (On a copy of
// kube-apiserver's gates, so no other test sees a change.)
func TestWatchCacheGatesAt137(t *testing.T) {
	for _, gate := range []string{"ConsistentListFromCache", "ResilientWatchCacheInitialization", "BtreeWatchCache"} {
		err := utilfeature.DefaultMutableFeatureGate.DeepCopy().Set(gate + "=true")
		if err == nil || !strings.Contains(err.Error(), "unrecognized feature gate") {
			t.Errorf("%s=true: %v, want unrecognized feature gate", gate, err)
		}
	}
	fg := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if !fg.Enabled(features.WatchCacheInitializationPostStartHook) {
		t.Error("WatchCacheInitializationPostStartHook is off")
	}
	if err := fg.Set("WatchCacheInitializationPostStartHook=false"); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("WatchCacheInitializationPostStartHook=false: %v, want an error that it is locked", err)
	}
	if !fg.Enabled(features.ListFromCacheSnapshot) {
		t.Error("ListFromCacheSnapshot is off; this lab's snapshots follow it on")
	}
}
