# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the shell tests: wait_for CMD... runs CMD until it succeeds, at most 10 s
# (a condition with a deadline, not a delay). Returns 1 on timeout.
wait_for() {
	_wf=0
	until "$@"; do
		_wf=$((_wf + 1))
		[ $_wf -gt 200 ] && return 1
		sleep 0.05
	done
}
