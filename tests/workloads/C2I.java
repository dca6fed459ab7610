// SPDX-License-Identifier: Apache-2.0
// C2I.java - a compiled method calling an interpreted one: run with
// -XX:CompileCommand=exclude,C2I::leafInterp, so compiledCaller is JIT
// compiled (it keeps no frame pointer: rbp is a plain register there)
// while leafInterp stays in the interpreter, where nearly all the time
// goes (tests/integration/test_agent_java.sh).
public final class C2I {
    static double leafInterp(int n) {
        double s = 0;
        for (int i = 0; i < n; i++)
            s += i * 0.5;
        return s;
    }

    static double compiledCaller(int n) {
        return leafInterp(n) + 1;
    }

    public static void main(String[] a) {
        long end = System.currentTimeMillis() + (long) (Double.parseDouble(a[0]) * 1000);
        double t = 0;
        while (System.currentTimeMillis() < end)
            t += compiledCaller(300);
        System.out.println("done " + (t > 0));
    }
}
