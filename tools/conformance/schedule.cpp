// The schedule checks of `gradwire conformance`: the calls a schedule makes through gw_schedule_runtime
// (checked the way the synchronizer checks them), the dry run the synchronizer relies on (save, on_step,
// load, on_step: the same calls twice), the checkpoint round trip and damaged state blobs.
#include <cstring>
#include <random>
#include <set>

#include "conformance/conformance.hpp"

namespace gwcli::conformance {
namespace {

// Records every call and enforces what the synchronizer enforces.
struct Recorder {
  std::vector<std::string> calls;
  std::set<uint64_t> open_slots;
  std::set<uint32_t> open_fragments;  // outer steps started and not finished
  uint64_t accumulated = 0;
  std::string violation;

  static Recorder& of(void* ctx) { return *static_cast<Recorder*>(ctx); }
  gw_status note(const std::string& call) {
    calls.push_back(call);
    return GW_OK;
  }
  gw_status bad(const std::string& what) {
    if (violation.empty()) violation = what;
    return GW_ERR_STATE;
  }
};

gw_schedule_runtime runtime_for(Recorder& rec, uint64_t step, uint32_t world) {
  gw_schedule_runtime rt{};
  rt.struct_size = sizeof rt;
  rt.ctx = &rec;
  rt.step = step;
  rt.world_size = world;
  rt.sync_gradients = [](void* c) { return Recorder::of(c).note("sync_gradients"); };
  rt.accumulate_gradients = [](void* c) {
    Recorder::of(c).accumulated++;
    return Recorder::of(c).note("accumulate_gradients");
  };
  rt.sync_accumulated = [](void* c) {
    Recorder& r = Recorder::of(c);
    if (r.accumulated == 0) return r.bad("sync_accumulated before any accumulate_gradients");
    r.accumulated = 0;
    return r.note("sync_accumulated");
  };
  rt.sync_parameters = [](void* c) { return Recorder::of(c).note("sync_parameters"); };
  rt.start_gradient_exchange = [](void* c, uint64_t slot) {
    Recorder& r = Recorder::of(c);
    if (!r.open_slots.insert(slot).second) return r.bad("start_gradient_exchange(" + std::to_string(slot) + ") twice");
    return r.note("start(" + std::to_string(slot) + ")");
  };
  rt.finish_gradient_exchange = [](void* c, uint64_t slot) {
    Recorder& r = Recorder::of(c);
    if (!r.open_slots.erase(slot))
      return r.bad("finish_gradient_exchange(" + std::to_string(slot) + ") without a pending start of that slot");
    return r.note("finish(" + std::to_string(slot) + ")");
  };
  rt.keep_local = [](void* c) { return Recorder::of(c).note("keep_local"); };
  rt.start_outer_step = [](void* c, const gw_outer_step* o) {
    Recorder& r = Recorder::of(c);
    if (o == nullptr || o->struct_size < sizeof(gw_outer_step) || o->fragments == 0 || o->fragment >= o->fragments)
      return r.bad("start_outer_step with a gw_outer_step that names no fragment");
    if (!r.open_fragments.insert(o->fragment).second)
      return r.bad("start_outer_step(fragment " + std::to_string(o->fragment) + ") while it is in flight");
    return r.note("start_outer(" + std::to_string(o->fragment) + ")");
  };
  rt.finish_outer_step = [](void* c, const gw_outer_step* o) {
    Recorder& r = Recorder::of(c);
    if (o == nullptr || !r.open_fragments.erase(o->fragment))
      return r.bad("finish_outer_step without a pending start of that fragment");
    return r.note("finish_outer(" + std::to_string(o->fragment) + ")");
  };
  return rt;
}

struct Schedule {
  const gw_schedule_vtable* v;
  void* s = nullptr;
  std::string why;

  bool step(Recorder& rec, uint64_t n) {
    gw_schedule_runtime rt = runtime_for(rec, n, 4);
    clear_error();
    const gw_status st = v->on_step(s, &rt);
    if (!rec.violation.empty()) {
      why = "step " + std::to_string(n) + ": " + rec.violation;
      return false;
    }
    if (st != GW_OK) {
      why = "step " + std::to_string(n) + ": on_step returned " + gw_status_string(st) + ": " + take_error();
      return false;
    }
    rec.calls.push_back("|");
    return true;
  }
  bool save(std::vector<unsigned char>& blob) {
    uint64_t size = 0;
    clear_error();
    gw_status st = v->save_state(s, nullptr, &size);
    if (st != GW_OK) {
      why = std::string("save_state(NULL) returned ") + gw_status_string(st) + ": " + take_error();
      return false;
    }
    blob.assign(size, 0);
    uint64_t cap = size;
    st = v->save_state(s, blob.data(), &cap);
    if (st != GW_OK || cap > size) {
      why = std::string("save_state returned ") + gw_status_string(st) + " (" + std::to_string(cap) + " bytes of " +
            std::to_string(size) + " asked for): " + take_error();
      return false;
    }
    blob.resize(cap);
    return true;
  }
};

void unit_checks(Plugin& plugin, const gw_component& comp, RankLink& link) {
  const std::string prefix = std::string("schedule.") + comp.name + ".";
  const auto* v = static_cast<const gw_schedule_vtable*>(comp.vtable);
  if (!plugin.init()) {
    link.report(prefix + "create", false, "the plugin's init failed: " + take_error());
    return;
  }
  auto create = [&](Schedule& s) {
    s.v = v;
    ConfigView* cfg = make_config(comp);
    clear_error();
    const gw_status st = v->create(plugin.state, host(), as_config(cfg), &s.s);
    free_config(cfg);
    if (st != GW_OK || s.s == nullptr) s.why = std::string("create returned ") + gw_status_string(st) + ": " + take_error();
    return st == GW_OK && s.s != nullptr;
  };
  Schedule a, b;
  if (!create(a) || !create(b)) {
    link.report(prefix + "create", false, a.why + b.why);
    return;
  }
  link.report(prefix + "create", true, "");

  // 1. The calls: 40 steps with a skipped one every 7, each call legal.
  Recorder rec;
  std::string why;
  for (uint64_t n = 0, done = 0; n < 40 && why.empty(); ++n) {
    if (n % 7 == 6) {
      const gw_status st = v->step_skipped(a.s);
      if (st != GW_OK) why = std::string("step_skipped returned ") + gw_status_string(st);
      continue;
    }
    if (!a.step(rec, done++)) why = a.why;
  }
  link.report(prefix + "calls", why.empty(), why);
  if (!why.empty()) return;

  // 2. The dry run: the synchronizer saves, calls on_step with recording callbacks, loads, and then
  //    calls on_step for real; both must make the same calls.
  why.clear();
  for (uint64_t n = 40; n < 60 && why.empty(); ++n) {
    std::vector<unsigned char> blob;
    Recorder dry = rec, real = rec;
    dry.calls.clear();
    real.calls.clear();
    if (!a.save(blob) || !a.step(dry, n)) {
      why = a.why;
      break;
    }
    clear_error();
    const gw_status st = v->load_state(a.s, blob.data(), blob.size());
    if (st != GW_OK) {
      why = std::string("load_state of what save_state wrote returned ") + gw_status_string(st) + ": " + take_error();
      break;
    }
    if (!a.step(real, n)) why = a.why;
    else if (dry.calls != real.calls)
      why = "step " + std::to_string(n) + ": on_step after load_state of the state saved before it made other calls "
            "than the first time; decisions must depend only on the state save_state writes";
    rec.open_slots = real.open_slots;
    rec.accumulated = real.accumulated;
  }
  link.report(prefix + "dry_run", why.empty(), why);

  // 3. Checkpoint: another instance loaded from a's state makes the same calls from then on.
  why.clear();
  {
    std::vector<unsigned char> blob;
    if (!a.save(blob)) {
      why = a.why;
    } else if (v->load_state(b.s, blob.data(), blob.size()) != GW_OK) {
      why = "load_state into a fresh instance failed: " + take_error();
    } else {
      Recorder ra = rec, rb = rec;
      ra.calls.clear();
      rb.calls.clear();
      for (uint64_t n = 60; n < 80 && why.empty(); ++n)
        if (!a.step(ra, n) || !b.step(rb, n)) why = a.why + b.why;
      if (why.empty() && ra.calls != rb.calls)
        why = "an instance loaded from another's saved state made other calls than the original over the next 20 steps";
    }
  }
  link.report(prefix + "save_load", why.empty(), why);

  // 4. Damaged blobs are refused with GW_ERR_CORRUPT.
  why.clear();
  {
    std::vector<unsigned char> blob;
    if (!a.save(blob) || blob.empty()) {
      why = blob.empty() ? "save_state wrote nothing: the state cannot be told from a damaged blob" : a.why;
    } else {
      std::vector<std::pair<std::string, std::vector<unsigned char>>> damaged;
      damaged.push_back({"an empty blob", {}});
      damaged.push_back({"a blob one byte short", std::vector<unsigned char>(blob.begin(), blob.end() - 1)});
      auto longer = blob;
      longer.push_back(0);
      damaged.push_back({"a blob one byte long", longer});
      auto magic = blob;
      magic[0] ^= 0xff;
      damaged.push_back({"a blob with its first byte changed", magic});
      std::mt19937 rng(3);
      std::vector<unsigned char> junk(blob.size());
      for (auto& c : junk) c = uint8_t(rng());
      damaged.push_back({"random bytes of the right length", junk});
      for (auto& [what, bytes] : damaged) {
        Schedule c;
        if (!create(c)) {
          why = c.why;
          break;
        }
        clear_error();
        const gw_status st = v->load_state(c.s, bytes.empty() ? nullptr : bytes.data(), bytes.size());
        v->destroy(c.s);
        if (st != GW_ERR_CORRUPT) {
          why = what + " was answered with " + gw_status_string(st) + "; the contract says GW_ERR_CORRUPT";
          break;
        }
      }
    }
  }
  link.report(prefix + "damaged_state", why.empty(), why);
  v->destroy(a.s);
  v->destroy(b.s);
  plugin.fini();
}

}  // namespace

std::vector<Check> check_schedule(Plugin& plugin, const gw_component& c, const Options& o) {
  const std::string prefix = std::string("schedule.") + c.name + ".";
  // The vtable's size and required members passed the loader's own checks (plugin.load).
  std::vector<Check> out;
  auto group = run_group(prefix + "unit", 1, 60 + o.timeout_s, [&](RankLink& link) { unit_checks(plugin, c, link); });
  out.insert(out.end(), group.begin(), group.end());
  return out;
}

}  // namespace gwcli::conformance
