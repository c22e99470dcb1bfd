package informer

import "time"

// elapse moves a synctest bubble's fake clock forward by d. Inside
// synctest.Test a timer fires as soon as every goroutine of the bubble is
// durably blocked, with the clock jumped to its deadline: no wall-clock
// time passes, and nothing is waited on but the Reflector's own timers
// (backoff, watch timeouts, resyncs) coming due. (A plain time.Sleep does
// the same inside a bubble; this name says that is all it does.)
func elapse(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}
