//! The PyO3 bindings: the native module `rnnsim._core`. Nothing outside this folder knows
//! about Python; the Python package `rnnsim/` wraps these classes thinly.

pub(crate) mod cells;
mod convert;
mod counters;
mod interrupt;
mod machines;
mod network;
mod trace;
mod turing;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_MAX_BITS", crate::sim::exact_engine::DEFAULT_MAX_BITS)?;
    m.add("AVX512_TILES", crate::sim::tile_kernel::AVX512_TILES_COMPILED)?;
    m.add_class::<network::PySimpleRnn>()?;
    m.add_class::<cells::PyCellNetwork>()?;
    m.add_function(wrap_pyfunction!(cells::saved_network_kind, m)?)?;
    m.add_class::<machines::PyDfa>()?;
    m.add_class::<machines::PyCompiledDfa>()?;
    m.add_function(wrap_pyfunction!(machines::compile_dfa, m)?)?;
    m.add_function(wrap_pyfunction!(machines::extract_dfa, m)?)?;
    m.add_function(wrap_pyfunction!(machines::two_layer_to_rnn, m)?)?;
    m.add_class::<turing::PyTuringMachine>()?;
    m.add_class::<turing::PyCompiledTm>()?;
    m.add_class::<turing::PyTmTrace>()?;
    m.add_function(wrap_pyfunction!(turing::compile_tm, m)?)?;
    m.add_class::<trace::PyNetTrace>()?;
    m.add_function(wrap_pyfunction!(network::dtype_name, m)?)?;
    m.add_class::<counters::PyCounter>()?;
    Ok(())
}
