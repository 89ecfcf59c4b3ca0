#include "instance/runtime.hpp"

#include <set>

#include "core/error.hpp"

namespace gw {
namespace {

gw_log_level parse_level(const std::string& s) {
  if (s == "error") return GW_LOG_ERROR;
  if (s == "warn") return GW_LOG_WARN;
  if (s == "info") return GW_LOG_INFO;
  if (s == "debug") return GW_LOG_DEBUG;
  return GW_LOG_TRACE;
}

}  // namespace

Runtime::Runtime(const gw_runtime_options& options)
    : logger_(std::make_shared<Logger>(options.log, options.log_user, options.log_level)) {
  if (options.config_path != nullptr && options.config_text != nullptr)
    fail(GW_ERR_INVALID_ARGUMENT, "give either config_path or config_text, not both");
  if (options.num_plugin_paths > 0 && options.plugin_paths == nullptr)
    fail(GW_ERR_INVALID_ARGUMENT, "num_plugin_paths is " + std::to_string(options.num_plugin_paths) + " but plugin_paths is NULL");
  const bool env = !(options.flags & GW_RUNTIME_NO_ENV_OVERRIDES);
  const config::Document doc = options.config_path ? config::Document::from_file(options.config_path)
                               : options.config_text ? config::Document::from_text(options.config_text)
                                                     : config::Document{};

  std::vector<std::string> paths;
  for (uint32_t i = 0; i < options.num_plugin_paths; ++i)
    paths.push_back(require(options.plugin_paths[i], "plugin_paths[i]"));
  for (auto& p : config::bootstrap_plugin_path(doc, env)) paths.push_back(std::move(p));
  registry_ = std::make_unique<Registry>(paths, logger_);
  const bool inspect = options.flags & GW_RUNTIME_INSPECT_ONLY;
  if (!inspect) registry_->check_unique();

  config::Schema schema = config::Schema::builtin();
  std::set<std::string> added;
  for (auto kind : {GW_COMPONENT_TRANSPORT, GW_COMPONENT_CODEC, GW_COMPONENT_SCHEDULE}) {
    for (const auto& ref : registry_->components(kind)) {
      const std::string key = std::string(config::kind_section(kind)) + "." + ref.component->name;
      if (!added.insert(key).second) continue;  // a duplicate, reported by check_unique
      schema.add_component(kind, ref.component->name, ref.component->help, ref.component->config_keys,
                           ref.component->num_config_keys);
    }
  }
  config_ = std::make_unique<config::Config>(schema, doc, env);
  const gw_log_level configured = parse_level(config_->get_string("runtime", "log_level"));
  if (configured > options.log_level) logger_->set_level(configured);
  if (!inspect) check_component_names();
}

void Runtime::check_component_names() const {
  auto check = [&](gw_component_kind kind, const std::string& section, const std::string& key, const std::string& value,
                   bool allow_auto) {
    if (allow_auto && value == "auto") return;
    try {
      registry_->find(kind, value);
    } catch (const Error& e) {
      const std::string origin = config_->origin(section, key);
      fail(e.status(), (origin == "default" ? std::string("default") : origin) + ": [" +
                           section.substr(0, section.find('.')) + "] " + key + " = \"" + value + "\": " + e.what());
    }
  };
  check(GW_COMPONENT_CODEC, "codec", "name", config_->get_string("codec", "name"), true);  // auto: sync/auto_codec
  for (const std::string& allowed : config_->get_strings("codec", "allow"))
    if (allowed != "none") check(GW_COMPONENT_CODEC, "codec", "allow", allowed, false);
  for (const std::string& listed : config_->get_strings("codec", "error_feedback_codecs"))
    check(GW_COMPONENT_CODEC, "codec", "error_feedback_codecs", listed, false);
  check(GW_COMPONENT_SCHEDULE, "schedule", "name", config_->get_string("schedule", "name"), false);
  check(GW_COMPONENT_TRANSPORT, "transport", "inter", config_->get_string("transport", "inter"), true);
  check(GW_COMPONENT_TRANSPORT, "transport", "intra", config_->get_string("transport", "intra"), true);
  if (const std::string device = config_->get_string("transport", "device"); device != "none")
    check(GW_COMPONENT_TRANSPORT, "transport", "device", device, false);
  for (size_t i = 0; i < config_->rules().size(); ++i) {
    const auto* rule = config_->rules()[i].as_table();
    check(GW_COMPONENT_CODEC, "rules." + std::to_string(i), "codec", *rule->get("codec")->value<std::string>(), true);
  }
}

std::unique_ptr<Codec> Runtime::make_codec(const std::string& name) const {
  const std::string chosen = name.empty() ? config_->get_string("codec", "name") : name;
  auto codec = std::make_unique<Codec>(registry_->find(GW_COMPONENT_CODEC, chosen), *config_);
  if (codec->has_rounds()) {
    // The codec that carries its round vectors, fixed by its configuration (asked with no tensor).
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    const char* wire = codec->round_plan(ctx, 0).wire_codec;
    if (wire != nullptr && std::string(wire) != "none" && !std::string(wire).empty()) {
      if (wire == chosen)
        fail(GW_ERR_PLUGIN, "codec '" + chosen + "' names itself as the wire codec of its rounds (a plugin bug)");
      auto carrier = std::make_unique<Codec>(registry_->find(GW_COMPONENT_CODEC, wire), *config_);
      if (carrier->has_rounds())
        fail(GW_ERR_CONFIG, "codec '" + chosen + "' sends its rounds through codec '" + wire +
                                "', which has rounds of its own; name a codec of one exchange (none, fp16, int8)");
      codec->set_wire_codec(std::move(carrier));
    }
  }
  return codec;
}

}  // namespace gw
