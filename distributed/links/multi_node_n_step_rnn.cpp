#include "distributed/links/multi_node_n_step_rnn.h"

#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <typeinfo>

#include "distributed/functions/function_channel.h"
#include "distributed/functions/point_to_point.h"

namespace chainermn::links {

using chainer::Error;
using chainer::str;
using chainer::Variable;
namespace L = chainer::links;
namespace mnf = chainermn::functions;

namespace {

constexpr const char* kFactory = "chainermn::links::create_multi_node_n_step_rnn";

// The dynamic type of LINK as C++ spells it (the name in the refusal of a link of another type).
std::string type_name(const chainer::Link& link) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(link).name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : typeid(link).name();
  std::free(demangled);
  return name;
}

}  // namespace

MultiNodeNStepRNN::MultiNodeNStepRNN(std::shared_ptr<L::NStepRNNBase> actual, int n_cells,
                                     std::shared_ptr<Communicator> comm, std::optional<int> rank_in,
                                     std::optional<int> rank_out)
    : n_cells_(n_cells), comm_(std::move(comm)), rank_in_(rank_in), rank_out_(rank_out) {
  if (!actual) throw Error("MultiNodeNStepRNN: the RNN link is null");
  if (n_cells != 1 && n_cells != 2) throw Error(str("MultiNodeNStepRNN: n_cells is ", n_cells, ", expected 1 or 2"));
  if (!comm_) throw Error("MultiNodeNStepRNN: the communicator is null");
  if (rank_in_) mnf::detail::check_peer(comm_, *rank_in_, "MultiNodeNStepRNN: rank_in");
  if (rank_out_) mnf::detail::check_peer(comm_, *rank_out_, "MultiNodeNStepRNN: rank_out");
  actual_rnn = add_link("actual_rnn", std::move(actual));
}

MultiNodeNStepRNNResult MultiNodeNStepRNN::forward(const std::vector<Variable>& xs) {
  std::vector<Variable> cells(static_cast<size_t>(n_cells_));  // undefined: the stack starts from zeros
  if (rank_in_) {
    mnf::RecvOptions expected;
    expected.device = device();
    expected.count = size_t(n_cells_);
    expected.shape = chainer::Shape{actual_rnn->n_layers() * actual_rnn->directions(), int64_t(xs.size()),
                                    actual_rnn->out_size()};
    try {
      cells = mnf::recv(comm_, *rank_in_, {}, 0, mnf::force_tuple, expected);
    } catch (const Error& e) {
      // Which link expected what: the recv's own message only knows the tensors.
      throw Error(str("MultiNodeNStepRNN (", type_name(*actual_rnn), " of ", actual_rnn->n_layers(), " layers of ",
                      actual_rnn->out_size(), " units, ", xs.size(),
                      xs.size() == 1 ? " sequence" : " sequences", ") receiving its initial states from rank ",
                      *rank_in_, ": ", e.what()));
    }
  }
  MultiNodeNStepRNNResult out;
  if (n_cells_ == 2) {
    chainer::functions::NStepLSTMResult r =
        static_cast<L::NStepLSTMBase&>(*actual_rnn).forward(cells[0], cells[1], xs);
    out.hy = std::move(r.hy);
    out.cy = std::move(r.cy);
    out.ys = std::move(r.ys);
  } else {
    chainer::functions::NStepRNNResult r = static_cast<L::NStepGRUBase&>(*actual_rnn).forward(cells[0], xs);
    out.hy = std::move(r.hy);
    out.ys = std::move(r.ys);
  }
  if (rank_out_)
    out.delegate = mnf::send(n_cells_ == 2 ? std::vector<Variable>{out.hy, out.cy} : std::vector<Variable>{out.hy},
                             comm_, *rank_out_);
  return out;
}

std::shared_ptr<MultiNodeNStepRNN> create_multi_node_n_step_rnn(std::shared_ptr<chainer::Link> actual_rnn,
                                                                std::shared_ptr<Communicator> comm,
                                                                std::optional<int> rank_in, std::optional<int> rank_out) {
  if (!actual_rnn) throw Error(str(kFactory, ": the RNN link is null"));
  int n_cells = 0;
  if (dynamic_cast<L::NStepLSTMBase*>(actual_rnn.get())) n_cells = 2;
  else if (dynamic_cast<L::NStepGRUBase*>(actual_rnn.get())) n_cells = 1;
  else
    throw Error(str(kFactory, ": a link of type ", type_name(*actual_rnn), " is not supported; expected a stacked RNN "
                    "link: NStepLSTM, NStepBiLSTM, NStepGRU, NStepBiGRU, NStepRNNTanh, NStepRNNReLU, NStepBiRNNTanh "
                    "or NStepBiRNNReLU"));
  if (!comm) throw Error(str(kFactory, ": the communicator is null"));
  if (rank_in) mnf::detail::check_peer(comm, *rank_in, str(kFactory, ": rank_in").c_str());
  if (rank_out) mnf::detail::check_peer(comm, *rank_out, str(kFactory, ": rank_out").c_str());
  return std::make_shared<MultiNodeNStepRNN>(std::static_pointer_cast<L::NStepRNNBase>(std::move(actual_rnn)), n_cells,
                                             std::move(comm), rank_in, rank_out);
}

}  // namespace chainermn::links
