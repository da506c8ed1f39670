//! One recurrent layer of any kind, behind one enum: the simple RNN (seed 001), LSTM, GRU,
//! Doubling-LSTM, QRNN (seed 003), 2RNN (seed 002), residual cell (seed 004) and MLP cell
//! (seed 000). Each kind's equations are in its own file; this file only dispatches.
//!
//! Every layer has a hidden state h (what the next layer and the user see) and some also a
//! cell state c (LSTM, Doubling-LSTM, QRNN). Layers are built from named parts
//! (`net::parts`), which is also how they are saved and how PyTorch weights come in.
//!
//! **Saturation** (`Cell::saturated`, Merrill 2019 "Sequential neural networks as
//! automata"): the limit ρ → ∞ of the network with every weight scaled by ρ, taken
//! activation by activation: σ(ρx) → sat_sigmoid(x) ∈ {0, 1/2, 1} and tanh(ρx) → sign(x) ∈
//! {−1, 0, 1} (slu → step); relu and identity are positively homogeneous and are kept.
//! Weights are not changed: the saturated network is the limit network itself. For the
//! LSTM's output nonlinearity tanh(c_t), whose argument is not a weighted sum, the literal
//! limit would keep tanh; it is replaced by sign too, so that saturated LSTMs are exactly
//! the counter machines of Merrill (2019) / Weiss et al. (2018) and run in exact arithmetic.

use crate::error::{SimError, SimResult};
use crate::net::activation::Activation;
use crate::net::doubling_lstm::DoublingLstm;
use crate::net::gru::Gru;
use crate::net::lstm::Lstm;
use crate::net::mlp_cell::MlpCell;
use crate::net::parts::{Options, PartsReader, PartsWriter, Tensors};
use crate::net::qrnn::Qrnn;
use crate::net::residual::Residual;
use crate::net::second_order::SecondOrder;
use crate::net::simple_rnn::SimpleRnn;

#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Simple(SimpleRnn),
    Lstm(Lstm),
    Gru(Gru),
    DoublingLstm(DoublingLstm),
    Qrnn(Qrnn),
    SecondOrder(SecondOrder),
    Residual(Residual),
    Mlp(MlpCell),
}

pub const CELL_KINDS: [&str; 8] = ["simple_rnn", "lstm", "gru", "doubling_lstm", "qrnn", "second_order", "residual", "mlp"];

impl Cell {
    pub fn kind(&self) -> &'static str {
        match self {
            Cell::Simple(_) => "simple_rnn",
            Cell::Lstm(_) => "lstm",
            Cell::Gru(_) => "gru",
            Cell::DoublingLstm(_) => "doubling_lstm",
            Cell::Qrnn(_) => "qrnn",
            Cell::SecondOrder(_) => "second_order",
            Cell::Residual(_) => "residual",
            Cell::Mlp(_) => "mlp",
        }
    }

    pub fn hidden_size(&self) -> usize {
        match self {
            Cell::Simple(n) => n.hidden_size(),
            Cell::Lstm(c) => c.w.hidden,
            Cell::Gru(c) => c.w.hidden,
            Cell::DoublingLstm(c) => c.w.hidden,
            Cell::Qrnn(c) => c.hidden,
            Cell::SecondOrder(c) => c.hidden,
            Cell::Residual(c) => c.v.rows,
            Cell::Mlp(c) => c.hidden,
        }
    }

    pub fn input_size(&self) -> usize {
        match self {
            Cell::Simple(n) => n.input_size(),
            Cell::Lstm(c) => c.w.input,
            Cell::Gru(c) => c.w.input,
            Cell::DoublingLstm(c) => c.w.input,
            Cell::Qrnn(c) => c.input,
            Cell::SecondOrder(c) => c.input,
            Cell::Residual(c) => c.w.cols,
            Cell::Mlp(c) => c.input,
        }
    }

    /// True for cells with a cell state c besides h (LSTM, Doubling-LSTM, QRNN).
    pub fn has_cell_state(&self) -> bool {
        matches!(self, Cell::Lstm(_) | Cell::DoublingLstm(_) | Cell::Qrnn(_))
    }

    pub fn activations(&self) -> Vec<Activation> {
        match self {
            Cell::Simple(n) => vec![n.activation],
            Cell::Lstm(c) => c.activations(),
            Cell::Gru(c) => c.activations(),
            Cell::DoublingLstm(c) => c.activations(),
            Cell::Qrnn(c) => c.activations(),
            Cell::SecondOrder(c) => c.activations(),
            Cell::Residual(c) => vec![c.activation],
            Cell::Mlp(c) => c.activations(),
        }
    }

    /// Ok when every nonlinearity has an exact rational form; else Unsupported, naming it.
    pub fn require_exact(&self, label: &str) -> SimResult<()> {
        let bad: Vec<&str> = self.activations().into_iter().filter(|a| !a.is_piecewise_linear()).map(|a| a.name()).collect();
        if bad.is_empty() {
            return Ok(());
        }
        let mut names: Vec<&str> = Vec::new();
        for b in bad {
            if !names.contains(&b) {
                names.push(b);
            }
        }
        let verb = if names.len() == 1 { "has" } else { "have" };
        Err(SimError::Unsupported(format!(
            "{label} uses {}, which {verb} no exact rational value, so it cannot run with dtype=\"exact\"; pick a \
             float format (\"f64\", \"f32\", \"bf16\", \"f16\"), or saturate the network first (rnnsim.saturate: \
             sigmoid → sat_sigmoid, tanh → sign), or build it with piecewise-linear gate functions \
             (step, sign, sat_sigmoid, slu, relu, identity)",
            names.join(" and ")
        )))
    }

    /// The saturated limit (see the module doc); weights unchanged.
    pub fn saturated(&self) -> Cell {
        match self {
            Cell::Simple(n) => Cell::Simple(SimpleRnn { activation: n.activation.saturated(), ..n.clone() }),
            Cell::Lstm(c) => Cell::Lstm(c.saturated()),
            Cell::Gru(c) => Cell::Gru(c.saturated()),
            Cell::DoublingLstm(c) => Cell::DoublingLstm(c.saturated()),
            Cell::Qrnn(c) => Cell::Qrnn(c.saturated()),
            Cell::SecondOrder(c) => Cell::SecondOrder(c.saturated()),
            Cell::Residual(c) => Cell::Residual(c.saturated()),
            Cell::Mlp(c) => Cell::Mlp(c.saturated()),
        }
    }

    /// Builds a layer of `kind` from named parts; every problem is pushed onto `problems`
    /// (prefixed with `label`), and None is returned if there was any.
    pub fn from_parts(kind: &str, label: &str, tensors: Tensors, options: Options, problems: &mut Vec<String>) -> Option<Cell> {
        let before = problems.len();
        let mut r = PartsReader::new(label, tensors, options, problems);
        let cell = match kind {
            "simple_rnn" => read_simple(&mut r).map(Cell::Simple),
            "lstm" => Lstm::read(&mut r).map(Cell::Lstm),
            "gru" => Gru::read(&mut r).map(Cell::Gru),
            "doubling_lstm" => DoublingLstm::read(&mut r).map(Cell::DoublingLstm),
            "qrnn" => Qrnn::read(&mut r).map(Cell::Qrnn),
            "second_order" => SecondOrder::read(&mut r).map(Cell::SecondOrder),
            "residual" => Residual::read(&mut r).map(Cell::Residual),
            "mlp" => MlpCell::read(&mut r).map(Cell::Mlp),
            other => {
                r.problem(format!("unknown cell kind {other:?}: expected one of {}", CELL_KINDS.join(", ")));
                return None;
            }
        };
        r.finish();
        if problems.len() > before { None } else { cell }
    }

    /// The layer's named parts (inverse of `from_parts`).
    pub fn parts(&self) -> (Tensors, Options) {
        let mut p = PartsWriter::default();
        match self {
            Cell::Simple(n) => {
                p.matrix("V", &n.v).matrix("W", &n.w).vector("b", &n.b).vector("h0", &n.h0).option("activation", n.activation.name());
            }
            Cell::Lstm(c) => c.write(&mut p),
            Cell::Gru(c) => c.write(&mut p),
            Cell::DoublingLstm(c) => c.write(&mut p),
            Cell::Qrnn(c) => c.write(&mut p),
            Cell::SecondOrder(c) => c.write(&mut p),
            Cell::Residual(c) => c.write(&mut p),
            Cell::Mlp(c) => c.write(&mut p),
        }
        p.finish()
    }
}

/// A simple RNN layer from parts V, W, b, optional h0 and the `activation` option (no readout:
/// inside a deep network only the top layer's state is seen).
fn read_simple(r: &mut PartsReader<'_>) -> Option<SimpleRnn> {
    let (hidden, parts) = r.recurrent(Activation::Tanh);
    let h0 = if r.has("h0") { r.vector("h0", hidden).map(Some) } else { Some(None) };
    let ((v, w, b, activation), h0) = (parts?, h0?);
    SimpleRnn::new(v, w, b, h0, activation, None).map_err(|e| r.problem(e.to_string())).ok()
}
