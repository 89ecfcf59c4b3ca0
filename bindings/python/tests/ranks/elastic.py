"""One rank of the elastic-membership tests of gradwire.torch (docs/elastic.md, "PyTorch"), with torchrun's
variables (or, joining, under `gradwire run --elastic`): a small MLP trained on this rank's shard of the data,
where the shard depends on the rank and the world size the wrapper reports, so a member that missed a
membership change shows in the final hash.

  elastic.py diloco kill VICTIM AT STEPS   DiLoCo (AdamW inside, int8 + error feedback, elastic=True): rank
                                           VICTIM SIGKILLs itself before its step AT; the others run until
                                           `steps` reaches STEPS
  elastic.py diloco stop VICTIM AT STEPS   rank VICTIM SIGSTOPs itself before its step AT; the lowest other
                                           rank continues it (SIGCONT) once the others changed membership;
                                           the others keep stepping until it was refused (or a bound)
  elastic.py diloco join VICTIM AT STEPS   under `gradwire run --elastic`: rank VICTIM SIGKILLs itself before
                                           its step AT, is started again and joins; the others step on until
                                           it was admitted, then to an outer step one outer period later
  elastic.py edp kill VICTIM AT STEPS      ElasticDataParallel (SGD with momentum, int8 + error feedback): rank
                                           VICTIM SIGKILLs itself 20 ms into its step AT (mid-step)
  elastic.py edp join VICTIM AT STEPS      the join case with ElasticDataParallel (the joiner takes the
                                           members' optimizer state); the others step on until it was admitted,
                                           then INNER steps more

What it prints:
  "rank R changed epoch E rank r size n steps s"     a membership change (R: the rank at the start)
  "rank R joined epoch E rank r size n steps s"      a process started again was admitted
  "rank R refused: CLASS: message"                   a step raised (the declared-dead rank)
  "rank R done steps S rank r size n epoch E hash H"  the end: H hashes the parameters (and, with
                                                     ElasticDataParallel, the optimizer's state)
GW_TEST_DIR: a folder for the stop case's files (the victim's pid, its refusal, where the others stop).
"""
import hashlib
import os
import signal
import sys
import threading
import time

import torch

import gradwire
import gradwire.torch as gwt

INNER = 4
TIMEOUT_S = 5.0


def model_of():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))


def batch(rank, world_size, step):
    """This rank's shard of step `step`'s global batch of 48 samples."""
    g = torch.Generator().manual_seed(step)
    x = torch.randn(48, 16, generator=g)
    x = x.chunk(world_size)[rank]
    return x, x[:, :4].sum(dim=1, keepdim=True) - x[:, 4:6].prod(dim=1, keepdim=True)


def digest(model, optimizer=None):
    """The parameters' hash; with `optimizer`, its state's too (every tensor, by parameter and name)."""
    h = hashlib.sha256(torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy().tobytes())
    if optimizer is not None:
        state = optimizer.state_dict()["state"]
        for index in sorted(state):
            for name in sorted(state[index]):
                value = state[index][name]
                h.update(f"{index}.{name}".encode())
                h.update(value.detach().cpu().numpy().tobytes() if torch.is_tensor(value) else repr(value).encode())
    return h.hexdigest()[:16]


def path(name):
    return os.path.join(os.environ["GW_TEST_DIR"], name)


def write(name, text):
    with open(path(name) + ".tmp", "w") as f:
        f.write(text)
    os.replace(path(name) + ".tmp", path(name))


def read(name):
    try:
        with open(path(name)) as f:
            return f.read()
    except FileNotFoundError:
        return None


def after_outer(n, least):
    """The smallest step count >= max(n, least) whose last step was an outer one: DiLoCo's replicas are
    identical after it."""
    n = max(n, least)
    return n + (1 - n) % INNER


def join_end(wrapper, n, least):
    """Where the join case ends, from n (a step count every member computes alike): ElasticDataParallel's
    replicas are identical after every step, DiLoCo's after an outer one."""
    return after_outer(n, least) if wrapper == "diloco" else max(n, least)


def main():
    wrapper, fault, victim, at, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    joined = not gwt.init_process_group("gloo")
    first = int(os.environ.get("RANK", os.environ.get("GW_RANK", "-1")))  # the rank at the start
    model = model_of()
    if wrapper == "diloco":
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        w = gwt.DiLoCo(model, opt, codec="int8", error_feedback=True, inner_steps=INNER, outer_lr=0.7,
                       outer_momentum=0.9, bucket_bytes=1024, elastic=True, min_ranks=2, timeout=TIMEOUT_S)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        w = gwt.ElasticDataParallel(model, opt, codec="int8", error_feedback=True, bucket_bytes=1024, min_ranks=2,
                                    timeout=TIMEOUT_S)
    if joined:
        print(f"rank {first} joined epoch {w.membership_epoch} rank {w.rank} size {w.world_size} steps {w.steps}",
              flush=True)
    faulty = first == victim and not joined
    continued = None   # the stop case: when the lowest other rank continued the victim
    # The join case: the members step on until the restarted process was admitted (size 4 again), then
    # to an outer step at least one outer period later, a step every member (and the joiner) computes alike.
    stop_at = steps if fault != "join" else (join_end(wrapper, w.steps + 1 + INNER, steps) if joined else 1 << 62)
    started = time.monotonic()
    calls = 0
    doomed = False
    try:
        while w.steps < stop_at:
            x, y = batch(w.rank, w.world_size, w.steps)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            calls += 1
            if faulty and w.steps == at:
                faulty = False
                if fault == "kill" and wrapper == "edp":
                    threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGKILL)).start()
                    doomed = True
                elif fault in ("kill", "join"):
                    os.kill(os.getpid(), signal.SIGKILL)
                elif fault == "stop":
                    write("victim.pid", str(os.getpid()))
                    os.kill(os.getpid(), signal.SIGSTOP)
            applied = w.step()
            if doomed:  # the step ended before the timer fired (a loaded machine): no further step, wait for it
                time.sleep(3600)
            if w.membership_changed:
                print(f"rank {first} changed epoch {w.membership_epoch} rank {w.rank} size {w.world_size} "
                      f"steps {w.steps}", flush=True)
                if fault == "join" and w.world_size == 4:
                    # DiLoCo's w.steps counts the step redone with the joiner, ElasticDataParallel's not
                    # (step() returned False: it is redone next): both end where the joiner does.
                    stop_at = join_end(wrapper, w.steps + (INNER if wrapper == "diloco" else 1 + INNER), steps)
                if fault == "stop" and continued is None and first == min(r for r in range(4) if r != victim):
                    os.kill(int(read("victim.pid")), signal.SIGCONT)
                    continued = time.monotonic()
            if wrapper == "edp" and applied is False:
                continue
            if fault == "join" and stop_at == 1 << 62:
                if time.monotonic() - started > 180:  # a hang guard, not a timing assertion
                    raise SystemExit(f"rank {first}: the restarted process did not join within 180 s")
                time.sleep(0.05)
            if fault == "stop":
                # The others step on until the continued victim was refused (it asks at their next step);
                # the lowest rank names a step a few outer steps ahead, which every member reaches later.
                said = read("stop-at")
                if said is not None:
                    stop_at = int(said)
                elif continued is not None and (read("refused") is not None or time.monotonic() - continued > 120):
                    stop_at = after_outer(w.steps + 3 * INNER, steps)
                    write("stop-at", str(stop_at))
                time.sleep(0.05)
    except gradwire.Error as e:
        print(f"rank {first} refused: {type(e).__name__}: {e}", flush=True)
        if fault == "stop":
            write("refused", str(first))
        try:
            w.close()
        except gradwire.Error as e2:
            print(f"rank {first} close: {type(e2).__name__}: {e2}", flush=True)
        return
    print(f"rank {first} done steps {w.steps} rank {w.rank} size {w.world_size} epoch {w.membership_epoch} "
          f"hash {digest(model, opt if wrapper == 'edp' else None)} calls {calls}", flush=True)
    w.close()
    # torch's process group is not used after a failure (its peer is gone): no destroy_process_group.


if __name__ == "__main__":
    main()
