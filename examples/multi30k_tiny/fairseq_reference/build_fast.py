# Builds fairseq's compiled parts that a translation run needs in place (the Cython
# batching helper and the BLEU scorer's C++ library), without installing fairseq.
import numpy
from Cython.Build import cythonize
from setuptools import setup, Extension
setup(
    script_args=["build_ext", "--inplace"],
    ext_modules=cythonize([Extension("fairseq.data.data_utils_fast",
                                     ["fairseq/data/data_utils_fast.pyx"],
                                     include_dirs=[numpy.get_include()], language="c++",
                                     extra_compile_args=["-std=c++11", "-O3"])],
                          language_level=3) + [
        Extension("fairseq.libbleu", ["fairseq/clib/libbleu/libbleu.cpp",
                                      "fairseq/clib/libbleu/module.cpp"],
                  extra_compile_args=["-std=c++11"])],
)
