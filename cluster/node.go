package main

// A simulated node: what a kubelet shows the control plane, without running a
// container. It registers a Ready Node, renews its Lease in kube-node-lease
// (the heartbeat the node lifecycle controller watches), and marks every pod
// bound to it Running and Ready, so Deployments, ReplicaSets and the scheduler
// behave as on kind. A pod being deleted is removed at once, as a kubelet does
// after its containers stop.
//
// Upstream counterpart: k8s.io/kubernetes@v1.37.0/pkg/kubelet (nodestatus,
// nodelease, status manager). Left out: containers, probes, volumes, images,
// resource accounting, pod phases other than Running (a Job's pods never
// complete here), eviction.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/version"
	"k8s.io/utils/ptr"
)

const (
	leaseDuration = 40 * time.Second
	renewInterval = 10 * time.Second // kubelet renews at a quarter of the duration
)

func runNode(args []string) int {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "the node's kubeconfig")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
		return 1
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n := &simNode{client: client, started: time.Now()}
	if err := n.run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "node: %v\n", err)
		return 1
	}
	return 0
}

type simNode struct {
	client  kubernetes.Interface
	started time.Time
	// nextIP numbers pod IPs in 10.244.0.0/24; only the run loop touches it.
	nextIP int
}

func (n *simNode) run(ctx context.Context) error {
	// The apiserver may still be starting: retry registration until it answers.
	var node *corev1.Node
	lastErr := ""
	for {
		var err error
		if node, err = n.register(ctx); err == nil {
			break
		}
		if err.Error() != lastErr { // once per kind of failure, not every 100ms
			lastErr = err.Error()
			fmt.Fprintf(os.Stderr, "node: register: %v (retrying)\n", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	fmt.Fprintf(os.Stderr, "node: registered %s\n", node.Name)

	factory := informers.NewSharedInformerFactoryWithOptions(n.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
		}))
	pods := factory.Core().V1().Pods().Informer()
	// The informer's handlers only enqueue; the run loop below does every API
	// call, so pods are synced one at a time and lease renewals share the loop.
	// The buffer absorbs a burst (a Deployment scaled up); when it is full the
	// handler waits, which only delays the informer, never loses a pod.
	queue := make(chan *corev1.Pod, 1024)
	enqueue := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			queue <- pod
		}
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()

	renew := time.NewTicker(renewInterval)
	defer renew.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-renew.C:
			if err := n.renewLease(ctx, node); err != nil {
				fmt.Fprintf(os.Stderr, "node: renew lease: %v\n", err)
			}
		case pod := <-queue:
			if err := n.syncPod(ctx, pod); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				fmt.Fprintf(os.Stderr, "node: pod %s/%s: %v\n", pod.Namespace, pod.Name, err)
			}
		}
	}
}

// register creates (or takes over) the Node, sets its status to Ready and
// creates its Lease.
func (n *simNode) register(ctx context.Context) (*corev1.Node, error) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": nodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
	}
	created, err := n.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = n.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	created.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       corev1.NodeRunning,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: nodeName},
		},
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "simulated node is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
		},
		NodeInfo: corev1.NodeSystemInfo{
			// The release labcluster was built at: build-labcluster.sh stamps
			// it into component-base's version (v1.37.0, or the pin of
			// labcluster-1.N of the previous release), as kubectl version
			// shows for the server.
			KubeletVersion:          version.Get().GitVersion,
			ContainerRuntimeVersion: "labcluster://simulated",
			OperatingSystem:         "linux",
			Architecture:            "amd64",
		},
	}
	updated, err := n.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return updated, n.renewLease(ctx, updated)
}

func (n *simNode) renewLease(ctx context.Context, node *corev1.Node) error {
	leases := n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:      nodeName,
				Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
				}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(nodeName),
				LeaseDurationSeconds: ptr.To(int32(leaseDuration.Seconds())),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// syncPod brings one pod to where a kubelet would: Running and Ready, or gone
// once it is being deleted.
func (n *simNode) syncPod(ctx context.Context, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		uid := pod.UID
		return n.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To(int64(0)),
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
	}
	if pod.Status.Phase == corev1.PodRunning {
		return nil
	}
	now := metav1.Now()
	pod = pod.DeepCopy()
	ip := n.podIP()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.HostIP = "127.0.0.1"
	pod.Status.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	pod.Status.StartTime = &now
	pod.Status.Conditions = nil
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:        c.Name,
			Image:       c.Image,
			ImageID:     c.Image,
			ContainerID: "labcluster://" + string(pod.UID) + "/" + c.Name,
			Ready:       true,
			Started:     ptr.To(true),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	_, err := n.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func (n *simNode) podIP() string {
	n.nextIP = n.nextIP%250 + 1
	return fmt.Sprintf("10.244.0.%d", n.nextIP+1)
}
