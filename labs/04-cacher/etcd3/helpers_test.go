package etcd3_test

import clientv3 "go.etcd.io/etcd/client/v3"

// clientv3Physical waits for the compaction to be applied, so the next
// request sees it.
func clientv3Physical() []clientv3.CompactOption { return []clientv3.CompactOption{clientv3.WithCompactPhysical()} }
