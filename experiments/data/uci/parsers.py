"""Raw bytes to matrices: the per-data-set parsers, the paper's preprocessing (one-hot, columns by
their largest absolute value, the matrix by its largest row norm; version
:data:`PREPROCESSING_VERSION`) and the preprocessing from public bounds (insurance, version
:data:`PUBLIC_PREPROCESSING_VERSION`)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from experiments.data.uci.dataset import DataCorruptError
from experiments.data.uci.sources import RAW_FILES

#: Bump when the parsing or scaling changes: it is part of every cache key.
PREPROCESSING_VERSION = "csspca-v1"


def _read_csv(raw: bytes, fname: str, **kw) -> pd.DataFrame:
    try:
        return pd.read_csv(io.BytesIO(raw), header=None, **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, UnicodeDecodeError) as exc:
        raise DataCorruptError(f"cannot parse {fname}: {exc}") from exc


def _check_columns(df: pd.DataFrame, expected: int, fname: str) -> None:
    if df.shape[1] != expected:
        raise DataCorruptError(
            f"{fname}: expected {expected} columns, found {df.shape[1]} (wrong or damaged file?)"
        )
    na = df.isna().to_numpy()
    if na.any():
        bad = int(np.flatnonzero(na.any(axis=1))[0])
        got = int((~na[bad]).sum())
        raise DataCorruptError(
            f"{fname}: row {bad + 1} has {got} fields, expected {expected} "
            "(truncated, damaged or wrong file?)"
        )


KDD_COLUMNS = [
    "duration",
    "protocol_type",
    "service",
    "flag",
    "src_bytes",
    "dst_bytes",
    "land",
    "wrong_fragment",
    "urgent",
    "hot",
    "num_failed_logins",
    "logged_in",
    "num_compromised",
    "root_shell",
    "su_attempted",
    "num_root",
    "num_file_creations",
    "num_shells",
    "num_access_files",
    "num_outbound_cmds",
    "is_host_login",
    "is_guest_login",
    "count",
    "srv_count",
    "serror_rate",
    "srv_serror_rate",
    "rerror_rate",
    "srv_rerror_rate",
    "same_srv_rate",
    "diff_srv_rate",
    "srv_diff_host_rate",
    "dst_host_count",
    "dst_host_srv_count",
    "dst_host_same_srv_rate",
    "dst_host_diff_srv_rate",
    "dst_host_same_src_port_rate",
    "dst_host_srv_diff_host_rate",
    "dst_host_serror_rate",
    "dst_host_srv_serror_rate",
    "dst_host_rerror_rate",
    "dst_host_srv_rerror_rate",
    "label",
]


KDD_CATEGORICAL = ["protocol_type", "service", "flag"]


CENSUS_COLUMNS = [
    "age",
    "class of worker",
    "detailed industry recode",
    "detailed occupation recode",
    "education",
    "wage per hour",
    "enroll in edu inst last wk",
    "marital stat",
    "major industry code",
    "major occupation code",
    "race",
    "hispanic origin",
    "sex",
    "member of a labor union",
    "reason for unemployment",
    "full or part time employment stat",
    "capital gains",
    "capital losses",
    "dividends from stocks",
    "tax filer stat",
    "region of previous residence",
    "state of previous residence",
    "detailed household and family stat",
    "detailed household summary in household",
    "instance weight",
    "migration code-change in msa",
    "migration code-change in reg",
    "migration code-move within reg",
    "live in this house 1 year ago",
    "migration prev res in sunbelt",
    "num persons worked for employer",
    "family members under 18",
    "country of birth father",
    "country of birth mother",
    "country of birth self",
    "citizenship",
    "own business or self employed",
    "fill inc questionnaire for veteran's admin",
    "veterans benefits",
    "weeks worked in year",
    "year",
    "income",
]


#: The 7 continuous attributes of census-income.names, plus the instance weight (see docs).
CENSUS_NUMERIC = [
    "age",
    "wage per hour",
    "capital gains",
    "capital losses",
    "dividends from stocks",
    "num persons worked for employer",
    "weeks worked in year",
    "instance weight",
]


#: All 33 nominal attributes plus the income label: d = 7 + 1 + 503 + 2 = 513 on the learn split
#: (level counts from census-income.names). The label is a feature ONLY because the paper's
#: d = 513 needs it; y still carries the label. Drop columns starting with "income=" if unwanted.
CENSUS_CATEGORICAL = [c for c in CENSUS_COLUMNS if c not in CENSUS_NUMERIC]


TIC_COLUMNS = (
    "MOSTYPE MAANTHUI MGEMOMV MGEMLEEF MOSHOOFD MGODRK MGODPR MGODOV MGODGE MRELGE MRELSA "
    "MRELOV MFALLEEN MFGEKIND MFWEKIND MOPLHOOG MOPLMIDD MOPLLAAG MBERHOOG MBERZELF MBERBOER "
    "MBERMIDD MBERARBG MBERARBO MSKA MSKB1 MSKB2 MSKC MSKD MHHUUR MHKOOP MAUT1 MAUT2 MAUT0 "
    "MZFONDS MZPART MINKM30 MINK3045 MINK4575 MINK7512 MINK123M MINKGEM MKOOPKLA PWAPART "
    "PWABEDR PWALAND PPERSAUT PBESAUT PMOTSCO PVRAAUT PAANHANG PTRACTOR PWERKT PBROM PLEVEN "
    "PPERSONG PGEZONG PWAOREG PBRAND PZEILPL PPLEZIER PFIETS PINBOED PBYSTAND AWAPART AWABEDR "
    "AWALAND APERSAUT ABESAUT AMOTSCO AVRAAUT AAANHANG ATRACTOR AWERKT ABROM ALEVEN APERSONG "
    "AGEZONG AWAOREG ABRAND AZEILPL APLEZIER AFIETS AINBOED ABYSTAND CARAVAN"
).split()


#: The five socio-demographic code columns 1-5 are one-hot encoded with the levels observed in
#: ticdata2000 (40 + 9 + 5 + 6 + 10 = 70 indicators) -> 80 + 70 = 150 = the paper's d.
TIC_CATEGORICAL = ["MOSTYPE", "MAANTHUI", "MGEMOMV", "MGEMLEEF", "MOSHOOFD"]


LOC_COLUMNS = ["sequence", "tag", "timestamp", "date", "x", "y", "z", "activity"]


LOC_NUMERIC = ["timestamp", "x", "y", "z"]


#: 25 sequences + 4 tags + 11 activities + 4 numeric = 44 = the paper's d (activity is also y).
LOC_CATEGORICAL = ["sequence", "tag", "activity"]


def _one_hot(
    df: pd.DataFrame,
    numeric: list[str],
    categorical: list[str],
    levels: dict[str, list] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Numeric columns as float, then one indicator column per level of each categorical."""
    blocks = [df[numeric].to_numpy(dtype=np.float64)] if numeric else []
    names = list(numeric)
    for col in categorical:
        values = df[col]
        lev = levels[col] if levels and col in levels else sorted(values.unique().tolist())
        codes = pd.Index(lev).get_indexer(values)  # -1 for levels unseen in `lev`
        block = np.zeros((len(df), len(lev)))
        ok = codes >= 0
        block[np.flatnonzero(ok), codes[ok]] = 1.0
        blocks.append(block)
        names += [f"{col}={v}" for v in lev]
    return np.hstack(blocks), names


def _parse_kddcup(raw: dict[str, bytes], split: str):
    fname = "kddcup.data_10_percent"
    df = _read_csv(
        raw[fname], fname, names=KDD_COLUMNS, dtype={c: str for c in KDD_CATEGORICAL + ["label"]}
    )
    _check_columns(df, 42, fname)
    numeric = [c for c in KDD_COLUMNS if c not in KDD_CATEGORICAL + ["label"]]
    M, names = _one_hot(df, numeric, KDD_CATEGORICAL)
    return M, names, df["label"].to_numpy(dtype=str)


def _parse_census_file(raw: bytes, fname: str) -> pd.DataFrame:
    df = _read_csv(
        raw,
        fname,
        names=CENSUS_COLUMNS,
        dtype=str,
        skipinitialspace=True,
        keep_default_na=False,
        na_values=[""],
    )
    _check_columns(df, 42, fname)
    for c in CENSUS_COLUMNS:
        df[c] = df[c].str.strip()
    df["income"] = df["income"].str.rstrip(".")
    try:
        df[CENSUS_NUMERIC] = df[CENSUS_NUMERIC].astype(np.float64)
    except ValueError as exc:
        raise DataCorruptError(
            f"{fname}: non-numeric value in a continuous column ({exc})"
        ) from exc
    return df


def _parse_census(raw: dict[str, bytes], split: str):
    frames = [_parse_census_file(raw[f], f) for f in RAW_FILES["census"][1][split]]
    df = pd.concat(frames, ignore_index=True)
    M, names = _one_hot(df, CENSUS_NUMERIC, CENSUS_CATEGORICAL)
    return M, names, df["income"].to_numpy(dtype=str)


def _parse_localization(raw: dict[str, bytes], split: str):
    fname = "ConfLongDemo_JSI.txt"
    df = _read_csv(
        raw[fname],
        fname,
        names=LOC_COLUMNS,
        dtype={"sequence": str, "tag": str, "date": str, "activity": str},
    )
    _check_columns(df, 8, fname)
    try:
        df[LOC_NUMERIC] = df[LOC_NUMERIC].astype(np.float64)
    except ValueError as exc:
        raise DataCorruptError(f"{fname}: non-numeric timestamp/x/y/z ({exc})") from exc
    M, names = _one_hot(df, LOC_NUMERIC, LOC_CATEGORICAL)
    return M, names, df["activity"].to_numpy(dtype=str)


def _read_insurance(
    raw: dict[str, bytes], split: str
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The 85 attributes of every row of ``split`` (and of ticdata2000 alone), and the labels."""
    train = _read_csv(raw["ticdata2000.txt"], "ticdata2000.txt", sep="\t", names=TIC_COLUMNS)
    _check_columns(train, 86, "ticdata2000.txt")
    frames, labels = [train[TIC_COLUMNS[:85]]], [train["CARAVAN"].to_numpy()]
    if split == "train+eval":
        ev = _read_csv(raw["ticeval2000.txt"], "ticeval2000.txt", sep="\t", names=TIC_COLUMNS[:85])
        _check_columns(ev, 85, "ticeval2000.txt")
        tg = _read_csv(raw["tictgts2000.txt"], "tictgts2000.txt", sep="\t", names=["CARAVAN"])
        _check_columns(tg, 1, "tictgts2000.txt")
        if len(tg) != len(ev):
            raise DataCorruptError(
                f"tictgts2000.txt has {len(tg)} rows but ticeval2000.txt has {len(ev)}"
            )
        frames.append(ev)
        labels.append(tg["CARAVAN"].to_numpy())
    df = pd.concat(frames, ignore_index=True)
    return df, train, np.concatenate(labels).astype(np.int64)


def _parse_insurance(raw: dict[str, bytes], split: str):
    df, train, y = _read_insurance(raw, split)
    levels = {c: sorted(train[c].unique().tolist()) for c in TIC_CATEGORICAL}
    numeric = [c for c in TIC_COLUMNS[:85] if c not in TIC_CATEGORICAL]
    M, names = _one_hot(df, numeric, TIC_CATEGORICAL, levels)
    return M, names, y


#: Version of the preprocessing from public bounds: part of its cache key and of its records'
#: ``preprocessing`` text.
PUBLIC_PREPROCESSING_VERSION = "public-bounds-v1"


#: The declared codes of the 85 insurance attributes, as ``(first, last, low, high, domain)``: the
#: attributes ``first`` to ``last`` (in :data:`TIC_COLUMNS` order) take the integer codes
#: ``low..high``.  Source: the data set's published dictionary, "CoIL Challenge 2000: The Insurance
#: Company Case" (P. van der Putten and M. van Someren, eds., Sentient Machine Research, 2000; the
#: ``TicDataDescr.txt`` / ``dictionary.txt`` of the UCI Insurance Company Benchmark (COIL 2000),
#: https://archive.ics.uci.edu/dataset/125), whose table gives each attribute's domain as a range or
#: as one of the code lists L0-L4.  ``domain`` quotes it.  In that table "..." repeats the domain
#: above it, down to the next attribute that states one.  Two bounds are read, not quoted:
#:
#: * MINKGEM and MKOOPKLA (42-43) state no domain of their own; they follow "see L3 / ..." of
#:   attributes 6-41 and precede 44's "see L4", so the "..." reading gives 0-9 (L3's codes).  They are
#:   classes, not percentages, but a single-digit code is all the dictionary's table allows there.
#: * The numbers of policies (65-85) are declared "1 - 12" (then "..."); a customer without such a
#:   policy has 0, which the dictionary does not list but which its contribution code L4 "0: f 0"
#:   (no contribution) implies, so the codes are 0-12.
#:
#: The five code lists L0 (customer subtype, 41 codes), L1 (age class, 6), L2 (main type, 10) and the
#: ranges of MAANTHUI (1-10) and MGEMOMV (1-6) are the one-hot attributes of the paper
#: (:data:`TIC_CATEGORICAL`), here with every declared level.
TIC_DICTIONARY: tuple[tuple[str, str, int, int, str], ...] = (
    ("MOSTYPE", "MOSTYPE", 1, 41, "Customer Subtype, see L0 (codes 1-41)"),
    ("MAANTHUI", "MAANTHUI", 1, 10, "Number of houses 1 - 10"),
    ("MGEMOMV", "MGEMOMV", 1, 6, "Avg size household 1 - 6"),
    ("MGEMLEEF", "MGEMLEEF", 1, 6, "Avg age, see L1 (codes 1-6: 20-30 ... 70-80 years)"),
    ("MOSHOOFD", "MOSHOOFD", 1, 10, "Customer main type, see L2 (codes 1-10)"),
    ("MGODRK", "MINK123M", 0, 9, "see L3 (0: 0%, 1: 1-10%, ..., 8: 89-99%, 9: 100%), then '...'"),
    ("MINKGEM", "MKOOPKLA", 0, 9, "no domain stated: read as the '...' of L3 above (0-9)"),
    ("PWAPART", "PBYSTAND", 0, 9, "Contribution, see L4 (0: f 0, ..., 9: f 20.000 - ?)"),
    ("AWAPART", "ABYSTAND", 0, 12, "Number of policies 1 - 12, then '...'; 0 = none"),
)


def tic_declared_codes() -> dict[str, tuple[int, int]]:
    """Each of the 85 insurance attributes -> its declared ``(low, high)`` codes (:data:`TIC_DICTIONARY`)."""
    out: dict[str, tuple[int, int]] = {}
    for first, last, low, high, _ in TIC_DICTIONARY:
        i, j = TIC_COLUMNS.index(first), TIC_COLUMNS.index(last)
        out.update({c: (low, high) for c in TIC_COLUMNS[i : j + 1]})
    return out


_TIC_DECLARED = tic_declared_codes()


#: The public bound on a row's L2 norm before the final division: every numeric attribute divided
#: by its declared maximum lies in [0, 1], and each one-hot attribute has exactly one indicator
#: equal to 1, so each of the 85 attributes adds at most 1 to the squared norm.
TIC_PUBLIC_ROW_BOUND = float(np.sqrt(85.0))


def insurance_public_matrix(df: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """The insurance rows preprocessed from public bounds alone: each row a function of itself.

    1. Every value must be one of its attribute's declared codes (:data:`TIC_DICTIONARY`); any other
       value is refused with one line naming the attribute and its declared codes (not the value,
       nor how many rows: messages name no number computed from the data).
    2. The attributes of :data:`TIC_CATEGORICAL` become one indicator per declared level (levels no
       row takes give zero columns, which are kept: d = 80 + 41 + 10 + 6 + 6 + 10 = 153 for any
       data); every other attribute is divided by its declared maximum.
    3. Every row is divided by :data:`TIC_PUBLIC_ROW_BOUND`, so its norm is at most 1 (a row whose
       norm rounds above 1 is divided by its own norm: still a function of the row alone).

    Parameters
    ----------
    df : pandas.DataFrame
        The 85 attributes (:data:`TIC_COLUMNS` without CARAVAN), one row per customer.

    Returns
    -------
    X : numpy.ndarray
        n x 153 float64, every row of L2 norm at most 1.
    names : list of str
        The column names (numeric attributes, then ``"<attribute>=<level>"``).

    Raises
    ------
    DataCorruptError
        A value outside its attribute's declared codes (or not an integer).

    Notes
    -----
    No statistic of the data enters: two data sets that differ in one raw row give matrices that
    differ in that row alone, and have the same d.  A differential-privacy guarantee for the
    matrix then holds for the raw records under replace-one-row neighbours.  Refusing (rather than
    clipping) an undeclared value: such a value means the file is not coded as documented, and no
    clipping of a categorical code is meaningful; the guarantee's domain is the declared codes.
    """
    for col in TIC_COLUMNS[:85]:
        low, high = _TIC_DECLARED[col]
        values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
        ok = np.isfinite(values) & (values == np.round(values)) & (values >= low) & (values <= high)
        if not ok.all():
            raise DataCorruptError(
                f"insurance attribute {col} holds a value outside its declared codes {low}-{high} "
                "(the CoIL 2000 dictionary); the public preprocessing refuses it"
            )
    numeric = [c for c in TIC_COLUMNS[:85] if c not in TIC_CATEGORICAL]
    levels = {c: list(range(_TIC_DECLARED[c][0], _TIC_DECLARED[c][1] + 1)) for c in TIC_CATEGORICAL}
    M, names = _one_hot(df.astype(np.int64), numeric, TIC_CATEGORICAL, levels)
    M[:, : len(numeric)] /= np.array([float(_TIC_DECLARED[c][1]) for c in numeric])
    M /= TIC_PUBLIC_ROW_BOUND
    norms = np.sqrt(np.einsum("ij,ij->i", M, M))
    over = norms > 1.0
    if over.any():
        M[over] /= norms[over, None]
    return np.ascontiguousarray(M), names


def _parse_insurance_public(raw: dict[str, bytes], split: str):
    df, _, y = _read_insurance(raw, split)
    M, names = insurance_public_matrix(df)
    return M, names, y


#: data set -> the name of its variant preprocessed from public bounds
PUBLIC_VARIANTS = {"insurance": "insurance_public"}


#: the preprocessings :func:`load_dataset` offers
PREPROCESSINGS = ("paper", "public")


_PREPROCESSING_TEXT = {
    "kddcup": "one-hot protocol_type/service/flag; label excluded",
    "census": "one-hot all 33 nominal attributes ('?' = own level) and the income label; "
    "7 continuous + instance weight numeric",
    "localization": "one-hot sequence/tag/activity; timestamp,x,y,z numeric; date dropped",
    "insurance": "ticdata2000[:85]+ticeval2000; one-hot MOSTYPE,MAANTHUI,MGEMOMV,MGEMLEEF,"
    "MOSHOOFD (levels of ticdata2000); CARAVAN excluded",
}


_PUBLIC_TEXT = {
    "insurance": "ticdata2000[:85]+ticeval2000; values checked against the CoIL 2000 dictionary's "
    "declared codes; one-hot MOSTYPE,MAANTHUI,MGEMOMV,MGEMLEEF,MOSHOOFD with every declared level; "
    "other attributes / declared maximum; rows / sqrt(85); CARAVAN excluded",
}


def scale_rows_and_columns(M: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Drop constant columns, divide columns by max |entry|, then divide by the max row norm."""
    M = np.asarray(M, dtype=np.float64)
    if M.shape[0] == 0:
        raise DataCorruptError("no rows")
    keep = (M.max(axis=0) != M.min(axis=0)) if M.shape[0] > 1 else np.abs(M).max(axis=0) > 0
    M = M[:, keep]
    names = [nm for nm, k in zip(names, keep) if k]
    colmax = np.abs(M).max(axis=0)
    colmax[colmax == 0] = 1.0
    M = M / colmax
    norms = np.sqrt(np.einsum("ij,ij->i", M, M))
    top = norms.max()
    if top > 0:
        M = M / top
    # Guard against round-off: no row may exceed norm 1.
    norms = np.sqrt(np.einsum("ij,ij->i", M, M))
    over = norms > 1.0
    if over.any():
        M[over] /= norms[over, None]
    return np.ascontiguousarray(M), names


def _parser(name: str):
    return globals()[f"_parse_{name}"]  # looked up at call time so tests can monkeypatch
