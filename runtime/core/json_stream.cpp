// parse_streaming() (json.h): nlohmann's SAX events built into a tree, except the elements of
// the selected arrays, each handed to the sink as soon as it is complete and then dropped.
// Written against the SAX interface rather than nlohmann's parser callback: that callback's
// end_object scans the parent array on every object, 35 times slower on a 700,000-op plan.
#include "core/json.h"

#include <utility>

namespace sg::json_util {
namespace {

class StreamingBuilder : public nlohmann::json_sax<Json> {
 public:
  StreamingBuilder(ElementSelect select,
                   const std::function<void(const std::vector<PathStep>&, Json&&)>& sink)
      : select_(select), sink_(sink) {}

  bool null() override { return scalar(Json(nullptr)); }
  bool boolean(bool v) override { return scalar(Json(v)); }
  bool number_integer(number_integer_t v) override { return scalar(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(Json(v)); }
  bool string(string_t& v) override { return scalar(Json(std::move(v))); }
  bool binary(binary_t& v) override { return scalar(Json(std::move(v))); }

  bool start_object(std::size_t) override { return open(Json::object(), /*array=*/false); }
  bool key(string_t& k) override {
    path_.back().key = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(Json::array(), /*array=*/true); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    error_position_ = position;
    error_ = ex.what();
    return false;
  }

  Json& root() { return root_; }
  const std::string& error() const { return error_; }
  std::size_t error_position() const { return error_position_; }

 private:
  struct Open {
    Json* value;    // the object or array being filled
    bool selected;  // an element of a selected array: handed over when it closes
  };

  // The step to the next value of the innermost container, with the path the selection sees.
  // An array's next element is at index size() plus the elements already handed over, which
  // path_ counts.
  Json* place(Json&& v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& parent = *open_.back().value;
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    Json& slot = parent[path_.back().key];
    slot = std::move(v);
    return &slot;
  }

  bool in_array() const { return !open_.empty() && open_.back().value->is_array(); }

  bool scalar(Json&& v) {
    if (in_array() && select_(path_)) {
      sink_(path_, std::move(v));
      ++path_.back().index;
      return true;
    }
    place(std::move(v));
    if (in_array()) ++path_.back().index;
    return true;
  }

  bool open(Json&& empty, bool array) {
    const bool selected = in_array() && select_(path_);
    open_.push_back({place(std::move(empty)), selected});
    PathStep step;
    step.is_index = array;
    path_.push_back(std::move(step));
    return true;
  }

  bool close() {
    const Open done = open_.back();
    open_.pop_back();
    path_.pop_back();
    if (done.selected) {
      Json& parent = *open_.back().value;  // selected elements are never the root
      sink_(path_, std::move(parent.back()));
      parent.erase(parent.size() - 1);
    }
    if (in_array()) ++path_.back().index;
    return true;
  }

  ElementSelect select_;
  const std::function<void(const std::vector<PathStep>&, Json&&)>& sink_;
  Json root_;
  std::vector<Open> open_;
  std::vector<PathStep> path_;  // one step per open container: its current key or index
  std::string error_;
  std::size_t error_position_ = 0;
};

}  // namespace

Result<Json> parse_streaming(std::string_view text, const std::string& path, ElementSelect select,
                             const std::function<void(const std::vector<PathStep>&, Json&&)>& sink) {
  SG_TRY(prescan(text, path));
  StreamingBuilder builder(select, sink);
  try {
    if (!Json::sax_parse(text.begin(), text.end(), &builder)) {
      return make_error(ErrorCode::kFormat, "{}: invalid JSON at byte {}: {}", path,
                        builder.error_position(), builder.error());
    }
  } catch (const Json::exception& e) {
    return make_error(ErrorCode::kFormat, "{}: invalid JSON: {}", path, e.what());
  }
  return std::move(builder.root());
}

}  // namespace sg::json_util
